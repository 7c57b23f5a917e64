"""Predicted vs published ResNet-50 images/s (tests/validation/vision_measurements.yaml).

One row per measurement (tuned rows apart from check rows), then per group the median and worst absolute
error. Targets (issue 18): batch 1 within 25%, large batch (>= 256) within 15%. Needs torch (the model is
traced once per batch size and kept in the trace cache).

Run from the repo root: python benchmarks/validate_vision.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import yaml  # noqa: E402

DATA = ROOT / "tests" / "validation" / "vision_measurements.yaml"


def rows() -> list[dict]:
    return yaml.safe_load(DATA.read_text())


def predict(row: dict, catalog) -> tuple[float, float]:
    """(images/s, seconds of the forward that the per-op overhead bounds) for a row."""
    from sizeup.ingest.trace_cache import traced_ledger
    from sizeup.ingest.trace_inputs import InputSpec
    from sizeup.price.overhead import get_runtime
    from sizeup.price.roofline import price

    shape = (row["batch"], 3, 224, 224)
    ledger = traced_ledger(row["model"], [InputSpec(shape=shape, dtype=row["dtype"], name=None)],
                           dtype=row["dtype"], name="resnet50")
    roof = price(ledger, catalog.device(row["device"]), runtime=get_runtime(row["runtime"]))
    return row["batch"] / roof.total_s.typical, roof.overhead_bound_s


def group(row: dict) -> str:
    kind = "batch 1" if row["batch"] == 1 else "large batch"
    return f"{kind}, {'fused engine' if row['runtime'] in ('tensorrt', 'onnxruntime') else 'pytorch eager'}"


def main() -> int:
    from sizeup.hardware.catalog import load_catalog

    catalog = load_catalog(include_user=False)
    errors: dict[str, list[float]] = {}
    print(f"{'row':24} {'set':6} {'runtime':18} {'measured':>9} {'predicted':>9} {'error':>7} {'overhead ms':>11}")
    for row in rows():
        predicted, overhead = predict(row, catalog)
        error = predicted / row["value"] - 1
        if row["set"] == "check":
            errors.setdefault(group(row), []).append(abs(error))
        print(f"{row['id']:24} {row['set']:6} {row['runtime']:18} {row['value']:9.1f} {predicted:9.1f} "
              f"{error:+7.1%} {overhead * 1e3:11.2f}")
    print("\ncheck rows only (tuned rows excluded):")
    for name, errs in errors.items():
        print(f"  {name:28} n={len(errs):2}  median |error| {statistics.median(errs):6.1%}  worst {max(errs):6.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
