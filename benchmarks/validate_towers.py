"""Predicted vs published tower latency, two check sets (issue 16; nothing in sizeup was tuned on either):

- tests/validation/tower_measurements.yaml: a vision-language model's vision tower (TensorRT-LLM visual engine);
- tests/validation/siglip_tower_measurements.yaml: SigLIP so400m/14 in timm's benchmark (eager AMP);
- tests/validation/whisper_encoder_measurements.yaml: Whisper's encoder pass (whisper.cpp `whisper-bench`,
  flash attention on), priced with `--engine llama.cpp` (the same ggml kernels) and the row's backend.

The tower term of the estimate's prefill (`InferenceEstimate.tower.latency_s`) for the row's batch.
Run from the repo root: python benchmarks/validate_towers.py
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import yaml  # noqa: E402

from sizeup.hardware.catalog import load_catalog  # noqa: E402
from sizeup.ingest.families.registry import parse_config  # noqa: E402
from sizeup.workload.inference import InferenceConfig, estimate_inference  # noqa: E402

DATA = ROOT / "tests" / "validation" / "tower_measurements.yaml"
SIGLIP = ROOT / "tests" / "validation" / "siglip_tower_measurements.yaml"
WHISPER = ROOT / "tests" / "validation" / "whisper_encoder_measurements.yaml"
CONFIGS = ROOT / "tests" / "ingest" / "configs"


def predict(row: dict, catalog):
    """The tower's latency range (seconds) for the row's batch: images through a vision tower, or
    sequences through an encoder."""
    data = json.loads((CONFIGS / f"{row['base_config']}.json").read_text())
    data.update(row.get("config", {}))
    for sub in ("text_config", "vision_config"):
        if sub in row:
            data[sub] = {**data[sub], **row[sub]}
    arch = parse_config(data, row["id"])
    vision = "images" in row
    cfg = InferenceConfig(batch=row["images"] if vision else row["batch"], prompt=row["prompt"], output=1,
                          images=1 if vision else 0, weights=row["quant"], engine=row["engine"],
                          backend=row.get("backend"))
    return estimate_inference(arch, catalog.device(row["device"]), cfg, limits=False).tower.latency_s


def error(row: dict, catalog) -> tuple[float, object]:
    """(predicted typical / measured - 1, the predicted range)."""
    r = predict(row, catalog)
    return r.typical * 1e3 / row["latency_ms"] - 1, r


def print_rows(rows: list[dict], catalog) -> list[float]:
    print("| id | device | set | measured ms | predicted ms (low - high) | error |")
    print("|---|---|---|---:|---:|---:|")
    errors = []
    for row in rows:
        e, r = error(row, catalog)
        errors.append(e)
        print(f"| {row['id']} | {row['device']} | {row['role']} | {row['latency_ms']:.2f} | {r.typical * 1e3:.2f} "
              f"({r.low * 1e3:.2f} - {r.high * 1e3:.2f}) | {e:+.1%} |")
    return errors


def summary(errors: list[float]) -> None:
    print(f"\nmedian error {statistics.median(errors):+.1%}, median |error| "
          f"{statistics.median(abs(e) for e in errors):.1%} over {len(errors)} rows")


def main() -> None:
    catalog = load_catalog(include_user=False)
    print("## Vision towers (TensorRT-LLM visual engine; timm CLIP ViT-L/14, eager AMP)\n")
    summary(print_rows(yaml.safe_load(DATA.read_text()), catalog))
    print("\n## SigLIP so400m/14 (timm, eager AMP)\n")
    summary(print_rows(yaml.safe_load(SIGLIP.read_text()), catalog))
    print("\n## Whisper encoder (whisper.cpp whisper-bench, FA 1)\n")
    rows = yaml.safe_load(WHISPER.read_text())
    errors = print_rows(rows, catalog)
    summary(errors)
    for backend in sorted({r["backend"] for r in rows}):
        sub = [e for r, e in zip(rows, errors) if r["backend"] == backend]
        print(f"  {backend}: median {statistics.median(sub):+.1%}, median |error| "
              f"{statistics.median(abs(e) for e in sub):.1%} ({len(sub)} rows)")


if __name__ == "__main__":
    main()
