"""Speed of the model readers (issue 16): a known family's `sizeup estimate` as a process (target: under
0.3 s, torch and transformers never imported) and the generic reader (transformers on the meta device)
on a 70B config (target: under 5 s and under 1 GiB peak RSS, in a fresh process).

Each known-family row runs `python -m sizeup estimate CONFIG --device a100-80gb --json` N times (wall
median / max) and once more in-process under a wrapper that reports whether torch or transformers is in
sys.modules afterwards. The generic row runs `generic.read_generic` (build on the meta device, map the layers) on llama-3.1-70b's config in a
fresh process and reports its wall time and peak RSS (ru_maxrss).

Run from the repo root:  python benchmarks/family_speed.py [--runs N]
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
CONFIGS = ROOT / "tests" / "ingest" / "configs"
KNOWN = [("llama (preset)", "llama-3.1-8b"), ("mamba", str(CONFIGS / "mamba-2.8b-hf.json")),
         ("mamba2", str(CONFIGS / "mamba-codestral-7b-v0.1.json")), ("llava", str(CONFIGS / "llava-1.5-7b-hf.json")),
         ("falcon", str(CONFIGS / "falcon-40b-instruct.json"))]
ESTIMATE_TARGET_S, GENERIC_TARGET_S, GENERIC_TARGET_RSS = 0.3, 5.0, 1 << 30

_PROBE = """
import contextlib, io, sys
from sizeup.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(sorted(m for m in ('torch', 'transformers', 'numpy') if m in sys.modules))
"""

_GENERIC = """
import json, resource, sys, time
t = time.perf_counter()
from sizeup.ingest import generic
from sizeup.ingest.config_file import read_config_file
arch = generic.read_generic(read_config_file(sys.argv[1]), "llama-3.1-70b", sys.argv[1])
wall = time.perf_counter() - t
print(json.dumps({"params": arch.params, "wall_s": wall, "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "reader": arch.reader}))
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def estimate_row(label: str, model: str, runs: int) -> tuple[str, float, float, str]:
    args = ["estimate", model, "--device", "a100-80gb", "--json"]
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "sizeup", *args], check=True, capture_output=True, env=_env())
        times.append(time.perf_counter() - t)
    probe = subprocess.run([sys.executable, "-c", _PROBE, *args], check=True, capture_output=True, text=True, env=_env())
    return label, statistics.median(times), max(times), probe.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    print(f"known families: `python -m sizeup estimate MODEL --device a100-80gb --json`, {runs} runs "
          f"(target < {ESTIMATE_TARGET_S} s)")
    print(f"{'family':<16} {'median s':>9} {'max s':>7}  heavy modules imported")
    for label, model in KNOWN:
        label, median, worst, heavy = estimate_row(label, model, runs)
        flag = "" if median < ESTIMATE_TARGET_S and "torch" not in heavy else "  <-- over target"
        print(f"{label:<16} {median:>9.3f} {worst:>7.3f}  {heavy}{flag}")
    config = ROOT / "src" / "sizeup" / "data" / "models" / "llama-3.1-70b.json"
    run = subprocess.run([sys.executable, "-c", _GENERIC, str(config)], capture_output=True, text=True, env=_env())
    if run.returncode:
        print(f"generic reader: not run ({run.stderr.strip().splitlines()[-1]})")
        return
    row = json.loads(run.stdout.strip().splitlines()[-1])
    print(f"\ngeneric reader on {config.name} (fresh process; targets < {GENERIC_TARGET_S} s, < 1 GiB RSS)")
    print(f"{'params':>16} {'wall s':>7} {'peak RSS MiB':>13}  reader")
    print(f"{row['params']:>16,} {row['wall_s']:>7.2f} {row['rss'] / 2**20:>13.0f}  {row['reader']}")


if __name__ == "__main__":
    main()
