"""Speed of `sizeup fit DEVICE --json` as a process (target: under 2 s), and what it answers.

Times N runs of `python -m sizeup fit DEVICE --json` per device (wall-clock median / min / max and the median CPU
time of the process, which a busy machine moves much less), after one warm-up run that writes the catalog cache
as a user's first run does; then checks the answer of the last run: how many distinct presets fit, that every row
names an engine, a format and a tokens/s, and that the rows are fastest first.

Run from the repo root:  python benchmarks/fit_speed.py [--runs N] [--device NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 2.0


def _env() -> dict[str, str]:
    """This shell's environment with the sources on the path, less PYTHONDONTWRITEBYTECODE (no user's shell sets
    it; without .pyc files every run compiles each module again)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _timed(argv: list[str]) -> tuple[float, float, str]:
    """Wall-clock and CPU (user + system) seconds of one run, and its stdout."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 2):
        sys.exit(f"{' '.join(argv)} failed ({code}): {err.decode(errors='replace')[-300:]}")
    return wall, usage.ru_utime + usage.ru_stime, out.decode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--device", action="append", default=None)
    args = parser.parse_args()
    devices = args.device or ["rtx-4060-ti-16gb", "apple-m3-max", "h100-sxm-80gb"]
    print(f"| device | runs | wall median (s) | min | max | CPU median (s) | presets that fit | rows | sorted | "
          f"under {TARGET_S:g} s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for device in devices:
        argv = [sys.executable, "-m", "sizeup", "fit", device, "--json"]
        _timed(argv)  # warm-up: catalog and data caches, .pyc files
        walls, cpus, out = [], [], ""
        for _ in range(args.runs):
            wall, cpu, out = _timed(argv)
            walls.append(wall)
            cpus.append(cpu)
        data = json.loads(out)
        rows = data["models"]
        complete = all(r["engine"] and r["format"] and r["tokens_per_s"] for r in rows)
        speeds = [r["tokens_per_s"] for r in rows]
        ordered = speeds == sorted(speeds, reverse=True)
        presets = len({r["model"] for r in rows})
        median = statistics.median(walls)
        print(f"| {device} | {args.runs} | {median:.2f} | {min(walls):.2f} | {max(walls):.2f} | "
              f"{statistics.median(cpus):.2f} | {presets} | {len(rows)} | {'yes' if ordered and complete else 'NO'} | "
              f"{'yes' if median < TARGET_S else 'NO'} |")


if __name__ == "__main__":
    main()
