"""Predicted vs published state-space-model decode measurements (tests/validation/ssm_measurements.yaml).

Every row is a CHECK row: gathered after the SSM pricing model (ingest/ssm_ops.py), no fit used it. Prints the
measured rate, sizeup's typical prediction with its low-high range, and the error of the typical.

Run from the repo root: python benchmarks/validate_ssm.py [--hf-eager]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import yaml  # noqa: E402

from sizeup.hardware.catalog import load_catalog  # noqa: E402
from sizeup.ingest.hf_config import load_model  # noqa: E402
from sizeup.workload.inference import InferenceConfig, estimate_inference  # noqa: E402

DATA = ROOT / "tests" / "validation" / "ssm_measurements.yaml"
HF_EAGER = ROOT / "tests" / "validation" / "inference_measurements_hf_eager.yaml"
"""Llama-class decode under transformers eager generate() (--hf-eager): the same hf pricing, attention models."""


def predict(row: dict, catalog) -> tuple[float, float, float]:
    """(typical, slowest, fastest) decode tokens/s per sequence for a row, as `sizeup estimate` prices it."""
    if row["metric"] != "decode_tokens_per_s":
        raise ValueError(f"unknown metric {row['metric']!r}")
    arch = load_model(str(ROOT / row["config"]) if "config" in row else row["model"])  # a config file or a built-in name
    cfg = InferenceConfig(batch=row["batch"], prompt=row["prompt_tokens"], output=row["output_tokens"],
                          weights=row["quant"], engine=row["engine"])
    rate = estimate_inference(arch, catalog.device(row["device"]), cfg, limits=False).decode.tokens_per_s
    return rate.typical / cfg.batch, rate.low / cfg.batch, rate.high / cfg.batch


def main() -> None:
    catalog = load_catalog(include_user=False)
    rows = yaml.safe_load((HF_EAGER if "--hf-eager" in sys.argv[1:] else DATA).read_text())
    print("set: CHECK rows (no fit used them)\n")
    print("| id | device | engine (stand-in) | measured tok/s | predicted tok/s | range | error |")
    print("|---|---|---|---:|---:|---|---:|")
    errors = []
    for row in rows:
        typical, low, high = predict(row, catalog)
        error = typical / row["value"] - 1
        errors.append(abs(error))
        inside = "in" if low <= row["value"] <= high else "OUT"
        print(f"| {row['id']} | {row['device']} | {row['engine']} | {row['value']:,.4g} | {typical:,.4g} | "
              f"{low:,.4g}-{high:,.4g} ({inside}) | {error:+.1%} |")
    print(f"\nmedian abs error {statistics.median(errors):.1%} over {len(errors)} rows")


if __name__ == "__main__":
    main()
