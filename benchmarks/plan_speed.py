"""`sizeup plan` on every example, as a process (target: under 3 s each), and how many families the
search simulated against how many it pruned; then the vision example twice in a fresh trace cache,
first (traced) beside second (read from the cache; target: under 1.5 s), with their outputs compared.

Run from the repo root: python benchmarks/plan_speed.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VISION = ROOT / "examples" / "vision-inspection.yaml"


def run(path: Path, env: dict[str, str]) -> tuple[float, float, int, str]:
    """Seconds, peak memory (MB) and exit code of `sizeup plan PATH` as a process, and what it printed."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, "-m", "sizeup", "plan", str(path)], stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read() or err.read().strip()
    return elapsed, usage.ru_maxrss / 1024, proc.returncode, text


def examples(env: dict[str, str]) -> None:
    print("| example | process (s) | exit code | verdict |")
    print("|---|---:|---:|---|")
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        elapsed, _, code, text = run(path, {**env, "SIZEUP_NO_CACHE": "1"})  # cold: traces every time
        lines = text.splitlines()
        verdict = lines[2] if len(lines) > 2 else text
        print(f"| {path.stem} | {elapsed:.2f} | {code} | {verdict} |")


def vision_cache(env: dict[str, str]) -> None:
    """First and second vision plan as processes in one fresh trace cache."""
    print()
    print("| vision-inspection, fresh cache | process (s) | peak memory (MB) | exit code | output |")
    print("|---|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as cache:
        env = {k: v for k, v in env.items() if k != "SIZEUP_NO_CACHE"} | {"SIZEUP_CACHE_DIR": cache}
        first = None
        for label in ("first (traced)", "second (from the cache)"):
            elapsed, peak, code, text = run(VISION, env)
            same = "" if first is None else ("identical to the first" if text == first else "DIFFERS from the first")
            first = text if first is None else first
            print(f"| {label} | {elapsed:.2f} | {peak:.0f} | {code} | {same} |")


def main() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    examples(env)
    vision_cache(env)


if __name__ == "__main__":
    main()
