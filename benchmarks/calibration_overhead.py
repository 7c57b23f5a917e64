"""Issue 18 on this machine's CPU: a zoo CNN measured over batch sizes, calibrated, and its per-op overhead term
compared (target: predicted within 20% of measured).

measure (batch 1..32) -> calibrate --quick -> calibrate --runs (the fit: latency = kernels x overhead +
work / rate, weighted least squares on each point's fastest repetition) -> compare: the overhead line gives the
predicted term (kernels x fitted host time per kernel, ± its standard error) against the measured one (the
intercept at batch 0 of the measured small-batch minima, less the priced work that does not grow with the batch).
It also prints how busy the machine was (load average, median over minimum per point). A throw-away run database;
needs torch.

Run from the repo root: python benchmarks/calibration_overhead.py [--model sizeup.examples.zoo:resnet50]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def sizeup(*args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-m", "sizeup", *args], capture_output=True, text=True, env=env)
    if out.returncode:
        raise SystemExit(f"sizeup {' '.join(args)} failed: {out.stderr.strip()}")
    return out.stdout


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="sizeup.examples.zoo:resnet50")
    p.add_argument("--input", default="1x3x32x32", help="small images keep the per-op overhead a visible share")
    p.add_argument("--batch", default="1,2,4,8,16,32", help="the small batches pin the overhead, the large the rate")
    p.add_argument("--statistic", default="auto", choices=("auto", "min", "p10", "median", "cpu-min"))
    p.add_argument("--threads", default="1", help="torch threads (1: each repetition's CPU time is recorded, "
                                                  "which the other processes on a shared machine do not add to)")
    p.add_argument("--held-out", default="sizeup.examples.zoo:resnet50",
                   help="a model measured at batches 1-8 and compared with the profile, not fitted on (not the target: "
                        "whether the per-kernel overhead carries to other work per kernel); '' skips it")
    p.add_argument("--held-out-input", default="1x3x64x64", help="4x the pixels of --input: the same kernels, "
                                                                  "4x the work each")
    p.add_argument("--keep", metavar="DB", help="keep the run database at this path (default: a throw-away one)")
    args = p.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        db = args.keep or str(Path(tmp) / "runs.db")
        sizeup("calibrate", "--quick", "--threads", args.threads, "--db", db)
        run = json.loads(sizeup("measure", args.model, "--input", args.input, "--batch", args.batch, "--db", db,
                                "--threads", args.threads, "--json"))
        run_id = str(run["run_id"])
        fit = json.loads(sizeup("calibrate", "--runs", run_id, "--statistic", args.statistic, "--db", db, "--json"))
        data = json.loads(sizeup("compare", run_id, "--db", db, "--json"))
        held = None
        if args.held_out:
            other = json.loads(sizeup("measure", args.held_out, "--input", args.held_out_input, "--batch", "1,2,4,8",
                                      "--db", db, "--threads", args.threads, "--json"))
            held = json.loads(sizeup("compare", str(other["run_id"]), "--db", db, "--json"))["overhead"]
    load_after = os.getloadavg()[0]
    bench = fit["bench"]
    print(f"micro-benchmarks: GEMM {[round(g['flops_per_s'] / 1e9) for g in bench['gemm']]} GFLOP/s at n = "
          f"{[g['n'] for g in bench['gemm']]}, copy {bench['copy_bytes_per_s'] / 1e9:.1f} GB/s")
    print(f"load average (1 min) {load_before:.2f} before, {load_after:.2f} after, on {os.cpu_count()} CPUs, "
          f"{args.threads} torch thread(s); "
          f"fit on the {fit['statistic']}: median error {fit['residual_median']:.1%}, compute factor "
          f"{fit['fitted']['vector']:.3g}")
    for point in data["points"]:
        cpu = point["measured_cpu_min_s"]
        print(f"batch {point['batch']:>3}: " + (f"cpu-min {cpu * 1e3:7.2f} ms, " if cpu else "")
              + f"min {point['measured_min_s'] * 1e3:7.2f} ms, median "
              f"{point['measured_s'] * 1e3:7.2f} ms (+{point['spread']:.0%}), predicted "
              f"{point['predicted_s'] * 1e3:7.2f} ms ({point['error_vs_statistic']:+.1%} vs {data['statistic']})")
    o = data["overhead"]
    ms = lambda v: "n/a" if v is None else f"{v * 1e3:.2f} ms"  # noqa: E731
    print(f"per-op overhead: predicted {ms(o['predicted_s'])} ± {ms(o['predicted_stderr_s'])} "
          f"({o['kernels']:.0f} kernels x {o['per_kernel_s'] * 1e6:.1f} us), measured {ms(o['measured_s'])} ± "
          f"{ms(o['measured_stderr_s'])} (fixed cost {ms(o['fixed_cost_measured_s'])} less priced fixed work "
          f"{ms(o['fixed_work_s'])}) -> " + ("n/a" if o["error"] is None else f"{o['error']:+.1%}"))
    if held is not None:
        print(f"held out ({args.held_out.rsplit(':', 1)[-1]} at {args.held_out_input}, not fitted on): predicted "
              f"{ms(held['predicted_s'])} ({held['kernels']:.0f} kernels), measured {ms(held['measured_s'])} ± "
              f"{ms(held['measured_stderr_s'])} -> "
              + ("n/a" if held["error"] is None else f"{held['error']:+.1%}"))
    if data["noise"]["noisy"]:
        print(f"noisy run: median up to +{data['noise']['max_spread']:.0%} over the minimum")
    passed = o["error"] is not None and abs(o["error"]) <= 0.20 and o["pinned"]
    error = "n/a" if o["error"] is None else format(o["error"], "+.1%")
    print(("PASS" if passed else "FAIL") + ": overhead within 20% of measured, and the measured overhead pinned "
          f"(its standard error <= 20% of it): error {error}, " + ("pinned" if o["pinned"] else "not pinned"))
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
