"""Issue 18 on this machine's CPU: a zoo CNN measured at batch 1 (and up), calibrated, and its per-op overhead term
compared in `compare` with the per-op overhead measured independently of the fit (target: within 20%).

Measured overhead: the run's floor — its forward on an empty batch (measure.floor: every module called, every op
dispatched, no element computed and no weight read). Predicted: the profile's per-op term (kernels x host time per
kernel). The calibration takes its per-op overhead from the fitted run's floor and fits the rates (compute and
memory factors) to its batches, so on the fitted row the agreement is by construction; the check is the held-out
rows — other image sizes and other zoo CNNs, never fitted on — where the same host time per kernel must predict
their own floors, and the rates their batch-1 latencies. Beside each floor, the batch line's intercept (the old
"measured" overhead: the fixed cost at batch 0 of the small batches less the priced fixed work) shows why it was no
measure of the per-op overhead: it holds the weights streamed every forward.

Each repeat is a fresh throw-away run database (micro-benchmarks, the fitted run, the fit, the held-out runs); the
load average is printed per repeat. Needs torch. Run from the repo root:
    python benchmarks/calibration_overhead.py [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ZOO = "sizeup.examples.zoo:"
FITTED = ("resnet50", "1x3x32x32", "1,2,4,8,16,32")
HELD_OUT = (("resnet50", "1x3x16x16", "1,2,4,8"), ("resnet50", "1x3x64x64", "1,2,4,8"),
            ("mlp_conv_net", "1x3x32x32", "1,2,4,8"), ("c2f", "1x64x32x32", "1,2,4"),
            ("c2f_depthwise", "1x64x32x32", "1,2,4"))


def sizeup(*args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-m", "sizeup", *args, "--json"], capture_output=True, text=True, env=env)
    if out.returncode:
        raise SystemExit(f"sizeup {' '.join(args)} failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def case_row(role: str, model: str, shape: str, data: dict) -> dict:
    o = data["overhead"]
    first = data["points"][0]
    errors = [abs(p["error_vs_statistic"]) for p in data["points"]]
    return {"role": role, "model": model, "input": shape, "kernels": o["kernels"], "predicted_s": o["predicted_s"],
            "floor_s": o["measured_s"], "error": o["error"], "pinned": o["pinned"], "intercept_s": o["intercept_s"],
            "batch1_measured_s": first["measured_statistic_s"], "batch1_error": first["error_vs_statistic"],
            "median_abs_error": statistics.median(errors)}


def one_repeat(args, db: str) -> tuple[dict, list[dict]]:
    threads = ("--threads", args.threads)
    sizeup("calibrate", "--quick", *threads, "--db", db)
    model, shape, batches = FITTED
    run = sizeup("measure", ZOO + model, "--input", shape, "--batch", batches, "--db", db, *threads)
    fit = sizeup("calibrate", "--runs", str(run["run_id"]), "--db", db)
    rows = [case_row("fitted", model, shape, sizeup("compare", str(run["run_id"]), "--db", db))]
    for model, shape, batches in HELD_OUT:
        other = sizeup("measure", ZOO + model, "--input", shape, "--batch", batches, "--db", db, *threads)
        rows.append(case_row("held-out", model, shape, sizeup("compare", str(other["run_id"]), "--db", db)))
    return fit, rows


def op_kinds(threads: int) -> list[tuple[str, float, float]]:
    """(op, least thread CPU time on an empty batch, on batch 1 at 1x1 pixels with small weights) per op kind: the
    per-op host cost by kind, and how far a real but tiny call (a oneDNN primitive looked up, an output allocated)
    is above the empty one."""
    import time

    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    w3, w1, lin = torch.randn(64, 64, 3, 3), torch.randn(64, 64, 1, 1), torch.nn.Linear(64, 64)
    bn = torch.nn.BatchNorm2d(64).eval()
    ops = {"conv 3x3": lambda x: F.conv2d(x, w3, padding=1), "conv 1x1": lambda x: F.conv2d(x, w1),
           "batch norm": bn, "relu": F.relu, "add": lambda x: x + x, "linear": lambda x: lin(x.flatten(1)),
           "max pool": lambda x: F.max_pool2d(x, 3, 2, 1), "cat": lambda x: torch.cat([x, x], 1)}

    def least(fn, x) -> float:
        with torch.inference_mode():
            for _ in range(5):
                fn(x)
            best = math.inf
            for _ in range(200):
                c = time.thread_time()
                fn(x)
                best = min(best, time.thread_time() - c)
        return best

    return [(name, least(fn, torch.randn(0, 64, 1, 1)), least(fn, torch.randn(1, 64, 1, 1)))
            for name, fn in ops.items()]


def ms(v) -> str:
    return "n/a" if v is None else f"{v * 1e3:.2f}"


def pct(v) -> str:
    return "n/a" if v is None else f"{v:+.0%}" if abs(v) >= 1 else f"{v:+.1%}"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--threads", default="1", help="torch threads (1: each repetition's thread CPU time is recorded, "
                                                  "which other processes on a shared machine do not add to)")
    args = p.parse_args()
    print(f"per-op host cost by kind (least thread CPU time of 200 calls, 64 channels), load average "
          f"{os.getloadavg()[0]:.2f}:")
    print("| op | empty batch (us) | batch 1, 1x1 pixels (us) |")
    print("|---|---:|---:|")
    for name, empty, tiny in op_kinds(int(args.threads)):
        print(f"| {name} | {empty * 1e6:.1f} | {tiny * 1e6:.1f} |")
    passed = []
    for repeat in range(1, args.repeats + 1):
        load_before = os.getloadavg()
        with tempfile.TemporaryDirectory() as tmp:
            fit, rows = one_repeat(args, str(Path(tmp) / "runs.db"))
        load_after = os.getloadavg()
        v = fit["fitted"]
        print(f"\nrepeat {repeat}: load average (1/5/15 min) {load_before[0]:.2f}/{load_before[1]:.2f}/"
              f"{load_before[2]:.2f} before, {load_after[0]:.2f}/{load_after[1]:.2f}/{load_after[2]:.2f} after, "
              f"{os.cpu_count()} CPUs, {args.threads} torch thread(s); fit on the {fit['statistic']} "
              f"({fit['overhead_source']} overhead): {v['overhead_s'] * 1e6:.2f} us/kernel, compute "
              f"{fit['fitted']['vector']:.3g}, memory {v['memory']:.3g}, median fit error {fit['residual_median']:.1%}")
        print("| role | model | input | kernels | predicted overhead (ms) | measured floor (ms) | error | "
              "batch-line intercept (ms) | batch 1 measured (ms) | batch 1 error | median abs error, all batches |")
        print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r['role']} | {r['model']} | {r['input']} | {r['kernels']:.0f} | {ms(r['predicted_s'])} | "
                  f"{ms(r['floor_s'])}{'' if r['pinned'] else ' (not pinned)'} | {pct(r['error'])} | "
                  f"{ms(r['intercept_s'])} | {ms(r['batch1_measured_s'])} | {pct(r['batch1_error'])} | "
                  f"{r['median_abs_error']:.1%} |")
        held = [r for r in rows if r["role"] == "held-out" and r["error"] is not None]
        within = sum(abs(r["error"]) <= 0.20 for r in held)
        print(f"held out: {within} of {len(held)} floors predicted within 20% by the fitted run's host time per "
              f"kernel; batch-1 latency within 20% on {sum(abs(r['batch1_error']) <= 0.2 for r in held)} of {len(held)}")
        ok = rows[0]["error"] is not None and abs(rows[0]["error"]) <= 0.20 and rows[0]["pinned"]
        passed.append(ok and within == len(held))
    print(("PASS" if all(passed) else "FAIL") + f": per-op overhead within 20% of the measured floor, fitted and every "
          f"held-out row, in {sum(passed)} of {len(passed)} repeats")
    return 0 if all(passed) else 1


if __name__ == "__main__":
    raise SystemExit(main())
