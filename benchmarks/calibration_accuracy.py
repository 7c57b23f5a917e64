"""Calibration accuracy on this CPU: fit on some batch sizes of one model, then predict held-out batch
sizes of it and every batch size of a second, different model (target: median |error| <= 15% after
calibration, and clearly better than before). The batch sizes stay where the working set is in the
same regime: the model has one memory bandwidth, no cache hierarchy, so it does not carry a fit from
cache-resident sizes to DRAM-bound ones.

Run from the repo root: python benchmarks/calibration_accuracy.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from sizeup.api import ParsedInput, count_flops  # noqa: E402
from sizeup.measure.calibrate import (fit_efficiency, local_device, microbenchmarks, profile_efficiency,  # noqa: E402
                                      size_curve, uncalibrated_efficiency)
from sizeup.measure.harness import TimingPolicy  # noqa: E402
from sizeup.store import Store  # noqa: E402
from sizeup.measure.sweep import SweepConfig, run_sweep  # noqa: E402
from sizeup.price.roofline import price  # noqa: E402

FIT = ("sizeup.examples.zoo:mlp_conv_net", (1, 3, 32, 32), (1, 2, 4, 8, 16))
HELD_BATCHES = (3, 6, 12)
SECONDS = [("sizeup.examples.zoo:llama_block", (1, 128, 512), (1, 2, 4)),
           ("sizeup.examples.zoo:c2f", (1, 64, 32, 32), (1, 2, 4))]


def measure(store, target, shape, batches):
    cfg = SweepConfig(target=target, inputs=(ParsedInput(shape=shape),), batches=batches, budget_s=120,
                      policy=TimingPolicy(point_budget_s=3.0))
    result = run_sweep(cfg, store)
    return {p.batch: p.result.median_s for p in result.points if p.result.status == "ok"}


def ledger(target, shape, batch):
    return count_flops(target, [ParsedInput(shape=(batch, *shape[1:]))]).ledger


def main() -> None:
    bench = microbenchmarks("cpu")
    device = local_device(bench)
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "runs.sqlite") as store:
        fit_target, fit_shape, fit_batches = FIT
        measured_a = measure(store, fit_target, fit_shape, fit_batches + HELD_BATCHES)
        measured_b = [(target, shape, measure(store, target, shape, batches)) for target, shape, batches in SECONDS]
    observations = [(ledger(fit_target, fit_shape, b), measured_a[b]) for b in fit_batches]
    curve = size_curve(bench)
    values, residual = fit_efficiency(device, observations, curve)
    calibrated, raw = profile_efficiency(values, 0.0, curve), uncalibrated_efficiency(device, bench)
    rows, errors = [], {"calibrated": [], "uncalibrated": []}
    cases = [(fit_target, fit_shape, b, measured_a[b], "held-out batch") for b in HELD_BATCHES] + \
            [(target, shape, b, t, "other model") for target, shape, m in measured_b for b, t in m.items()]
    for target, shape, batch, measured, what in cases:
        led = ledger(target, shape, batch)
        after = price(led, device, calibrated).total_s.typical
        before = price(led, device, raw).total_s.typical
        errors["calibrated"].append(abs(after / measured - 1))
        errors["uncalibrated"].append(abs(before / measured - 1))
        rows.append((target.rsplit(":", 1)[1], batch, what, measured, before, after))
    print(f"micro-benchmarks: GEMM {bench['matmul_flops_per_s'] / 1e9:.1f} GFLOP/s, copy "
          f"{bench['copy_bytes_per_s'] / 1e9:.1f} GB/s; fit on {fit_target.rsplit(':', 1)[1]} batches "
          f"{fit_batches}: median fit error {residual:.1%}")
    print("| model | batch | case | measured (ms) | uncalibrated (ms) | calibrated (ms) |")
    print("|---|---:|---|---:|---:|---:|")
    for name, batch, what, measured, before, after in rows:
        print(f"| {name} | {batch} | {what} | {measured * 1e3:.2f} | {before * 1e3:.2f} | {after * 1e3:.2f} |")
    print("fitted: " + ", ".join(f"{k} {v:.3g}" for k, v in values.items()))
    print(f"\nmedian |error|: uncalibrated {statistics.median(errors['uncalibrated']):.1%}, "
          f"calibrated {statistics.median(errors['calibrated']):.1%}")


if __name__ == "__main__":
    main()
