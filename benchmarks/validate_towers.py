"""Predicted vs published vision-tower latency (tests/validation/tower_measurements.yaml, a check set).

The tower term of the estimate's prefill (`InferenceEstimate.tower.latency_s`), for the row's images.
Run from the repo root: python benchmarks/validate_towers.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import yaml  # noqa: E402

from sizeup.hardware.catalog import load_catalog  # noqa: E402
from sizeup.ingest.families.registry import parse_config  # noqa: E402
from sizeup.workload.inference import InferenceConfig, estimate_inference  # noqa: E402

DATA = ROOT / "tests" / "validation" / "tower_measurements.yaml"
CONFIGS = ROOT / "tests" / "ingest" / "configs"


def predict(row: dict, catalog):
    """The tower's latency range (seconds) for the row's batch of images."""
    data = json.loads((CONFIGS / f"{row['base_config']}.json").read_text())
    data["text_config"] = {**data["text_config"], **row.get("text_config", {})}
    arch = parse_config(data, row["id"])
    cfg = InferenceConfig(batch=row["images"], prompt=row["prompt"], output=1, images=1, weights=row["quant"],
                          engine=row["engine"])
    return estimate_inference(arch, catalog.device(row["device"]), cfg, limits=False).tower.latency_s


def main() -> None:
    catalog = load_catalog(include_user=False)
    print("| id | set | measured ms | predicted ms (low - high) | error |")
    print("|---|---|---:|---:|---:|")
    for row in yaml.safe_load(DATA.read_text()):
        r = predict(row, catalog)
        error = r.typical * 1e3 / row["latency_ms"] - 1
        print(f"| {row['id']} | {row['role']} | {row['latency_ms']:.2f} | {r.typical * 1e3:.2f} ({r.low * 1e3:.2f} - "
              f"{r.high * 1e3:.2f}) | {error:+.1%} |")


if __name__ == "__main__":
    main()
