"""Predicted vs published encoder serving throughput (tests/validation/encoder_measurements.yaml, a check set).

An encoder request is one prefill: batch × sequence tokens through the encoder, no decode.
Run from the repo root: python benchmarks/validate_encoder.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import yaml  # noqa: E402

from sizeup.hardware.catalog import load_catalog  # noqa: E402
from sizeup.ingest.hf_config import load_model, parse_config  # noqa: E402
from sizeup.workload.inference import InferenceConfig, estimate_inference  # noqa: E402

DATA = ROOT / "tests" / "validation" / "encoder_measurements.yaml"


def predict(row: dict, catalog) -> float:
    arch = load_model(row["model"]) if row.get("model") else parse_config(row["config"], name=row["id"])
    cfg = InferenceConfig(batch=row["batch"], prompt=row["seq"], output=0, weights=row["quant"], engine=row["engine"])
    e = estimate_inference(arch, catalog.device(row["device"]), cfg)
    return e.prefill.tokens_per_s.typical


def main() -> None:
    catalog = load_catalog(include_user=False)
    rows = yaml.safe_load(DATA.read_text())
    errors = []
    print("| id | set | measured tokens/s | predicted | sequences/s measured | error |")
    print("|---|---|---:|---:|---:|---:|")
    for row in rows:
        predicted = predict(row, catalog)
        error = predicted / row["value"] - 1
        errors.append(abs(error))
        print(f"| {row['id']} | {row['role']} | {row['value']:,.0f} | {predicted:,.0f} | "
              f"{row['value'] / row['seq']:,.0f} | {error:+.1%} |")
    errors.sort()
    p90 = errors[min(len(errors) - 1, int(round(0.9 * (len(errors) - 1))))]
    print(f"\ncheck set: {len(errors)} rows, median abs error {statistics.median(errors):.1%}, p90 {p90:.1%}")


if __name__ == "__main__":
    main()
