"""Predicted vs published ResNet-50 images/s (tests/validation/vision_measurements.yaml).

One row per measurement (tuned rows apart from check rows), priced without and with the SM-occupancy law
(price/occupancy.py), then per set and group the median, p90 and worst absolute error. Targets (issue 18): batch 1 within 25%, large batch (>= 256) within 15%. Needs torch (the model is
traced once per batch size and kept in the trace cache).

A row's runtime fixes the layout cuDNN sees: pytorch-eager / pytorch-eager-amp hand it NCHW tensors (a
tensor-core conv then runs an NCHW->NHWC transform kernel first, price/conv_algos.py), the -channels-last
runtime and torch-compile (inductor's layout optimisation) NHWC. No large-batch row is tuned: the GeForce
half-rate efficiencies (gpu.yaml *@fp32acc-half-rate) come from torch.matmul figures, the layout cost from
bytes; the timm NCHW/NHWC pairs check both.

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


def predict(row: dict, catalog, occupancy: bool = True) -> tuple[float, float]:
    """(images/s, seconds of the forward that the per-op overhead bounds) for a row; `occupancy` False
    prices it without the SM-occupancy law (price/occupancy.py), for the before/after columns."""
    from sizeup.ingest.trace_cache import traced_ledger
    from sizeup.ingest.trace_inputs import InputSpec
    from sizeup.price import roofline
    from sizeup.engines.runtimes import get_runtime

    shape = (row["batch"], 3, 224, 224)
    ledger = traced_ledger(row["model"], [InputSpec(shape=shape, dtype=row["dtype"], name=None)],
                           dtype=row["dtype"], name="resnet50")
    kinds = roofline.OCCUPANCY_KINDS
    try:
        if not occupancy:
            roofline.OCCUPANCY_KINDS = frozenset()
        roof = roofline.price(ledger, catalog.device(row["device"]), runtime=get_runtime(row["runtime"]))
    finally:
        roofline.OCCUPANCY_KINDS = kinds
    return row["batch"] / roof.total_s.typical, roof.overhead_bound_s


FAMILY = {"tensorrt": "fused engine", "tensorrt-cuda-graphs": "fused engine", "onnxruntime": "fused engine", "torch-compile": "compiled"}


def group(row: dict) -> str:
    kind = "batch 1" if row["batch"] == 1 else "large batch"
    return f"{kind}, {FAMILY.get(row['runtime'], 'pytorch eager')}"


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def main() -> int:
    from sizeup.hardware.catalog import load_catalog

    catalog = load_catalog(include_user=False)
    errors: dict[tuple[str, str, str], list[float]] = {}
    print(f"{'row':28} {'set':6} {'runtime':18} {'device':18} {'batch':>5} {'measured':>9} "
          f"{'before':>8} {'error':>7} {'after':>8} {'error':>7} {'overhead ms':>11}")
    for row in rows():
        before, _ = predict(row, catalog, occupancy=False)
        after, overhead = predict(row, catalog)
        e_before, e_after = before / row["value"] - 1, after / row["value"] - 1
        for when, e in (("before", e_before), ("after", e_after)):
            errors.setdefault((row["set"], group(row), when), []).append(abs(e))
        print(f"{row['id']:28} {row['set']:6} {row['runtime']:18} {row['device']:18} {row['batch']:5} "
              f"{row['value']:9.1f} {before:8.1f} {e_before:+7.1%} {after:8.1f} {e_after:+7.1%} {overhead * 1e3:11.2f}")
    print("\n|error| per set and group (before = without the SM-occupancy law, after = with it):")
    for (kind, name, when), errs in sorted(errors.items(), key=lambda kv: (kv[0][0] != "check", kv[0][1], kv[0][2] != "before")):
        print(f"  {kind:6} {name:28} {when:6} n={len(errs):2}  median {statistics.median(errs):6.1%}  "
              f"p90 {p90(errs):6.1%}  worst {max(errs):6.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
