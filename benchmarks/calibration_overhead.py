"""Issue 18 on this machine's CPU: a zoo CNN measured at small batches, calibrated, and its per-op overhead
term compared (target: predicted within 20% of measured).

measure (batch 1,2,4,8) -> calibrate --quick -> calibrate --runs (the fit) -> compare: the overhead line
gives the predicted term (kernels x fitted host time per kernel) against the measured one (the intercept at
batch 0 of the measured latencies). Uses a throw-away run database; needs torch.

Run from the repo root: python benchmarks/calibration_overhead.py [--model sizeup.examples.zoo:resnet50]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def sizeup(*args: str) -> str:
    env = {"PYTHONPATH": str(ROOT / "src")}
    import os

    out = subprocess.run([sys.executable, "-m", "sizeup", *args], capture_output=True, text=True,
                         env={**os.environ, **env}, check=True)
    return out.stdout


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="sizeup.examples.zoo:resnet50")
    p.add_argument("--input", default="1x3x32x32", help="small images keep the per-op overhead a visible share")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "runs.db")
        sizeup("calibrate", "--quick", "--db", db)
        sizeup("measure", args.model, "--input", args.input, "--batch", "1,2,4,8", "--db", db)
        print(sizeup("calibrate", "--runs", "1", "--db", db))
        data = json.loads(sizeup("compare", "1", "--db", db, "--json"))
    for point in data["points"]:
        print(f"batch {point['batch']}: measured {point['measured_s'] * 1e3:.2f} ms, "
              f"predicted {point['predicted_s'] * 1e3:.2f} ms ({point['error']:+.1%})")
    o = data["overhead"]
    print(f"per-op overhead: predicted {o['predicted_s'] * 1e3:.2f} ms ({o['kernels']:.0f} kernels x "
          f"{o['per_kernel_s'] * 1e6:.1f} us), measured {o['measured_s'] * 1e3:.2f} ms -> {o['error']:+.1%}")
    return 0 if o["error"] is not None and abs(o["error"]) <= 0.20 else 1


if __name__ == "__main__":
    raise SystemExit(main())
