"""Start-up of the `sizeup` command beside Python's own (target: estimate under 0.15 s median as a process).

Times, in the same run, N runs each: `python -c pass`, `python -m sizeup estimate llama-3.1-8b --device
rtx-4090 --json`, the `sizeup` entry point (when installed) with the same arguments, and `python -m sizeup
--help` (wall-clock median / min / max, and the median CPU time of the process, which a busy machine
moves much less); then the in-process time of the catalog load, and, from one `python -X importtime` run
of the estimate, the imports that cost most. Compare the rows of one run with each other.

With `--base SRC` (another checkout's src/, e.g. the main branch's), every command also runs from SRC, the
two trees in turn (base, this, base, this, ...), with `estimate --help` and a plan of
examples/team-api-200-users.yaml added: median, p10 and p90 of wall and CPU time for each tree and the median
of the pairwise CPU ratios (this / base), which holds when a shared machine's speed drifts.

Run from the repo root:  python benchmarks/startup.py [--runs N] [--base ../main/src]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ESTIMATE = ["estimate", "llama-3.1-8b", "--device", "rtx-4090", "--json"]
TARGET_S = 0.15


SRC = ROOT / "src"


def _env() -> dict[str, str]:
    """This shell's environment with the sources on the path, less PYTHONDONTWRITEBYTECODE: this sandbox
    sets it, no user's shell does, and without .pyc files every run compiles each module it imports again
    (the warm-up run below writes them, as a user's first run does)."""
    env = dict(os.environ, PYTHONPATH=str(SRC))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _time(argv: list[str], runs: int) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU (user + system) seconds of each run; CPU time barely moves when the machine is busy."""
    wall, cpu = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env())
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall.append(time.perf_counter() - t0)
        cpu.append(usage.ru_utime + usage.ru_stime)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(argv)} failed ({proc.returncode}): {err.decode(errors='replace')[-300:]}")
    return wall, cpu


def _entry_point() -> str | None:
    """The installed `sizeup` script next to this interpreter (not a pyenv shim, which adds its own start-up)."""
    beside = Path(sys.executable).with_name("sizeup")
    if beside.is_file():
        return str(beside)
    found = shutil.which("sizeup")
    return found if found and "shims" not in found else None


def _imports(top: int) -> list[tuple[str, float]]:
    """(module, cumulative ms) of the costliest imports of one estimate: outermost ones only (what a module
    imports is inside its figure)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "sizeup", *ESTIMATE], capture_output=True,
                          text=True, env=_env())
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = (part.strip("| ") for part in line.removeprefix("import time:").split("|"))
        depth = (len(line.split("|")[2]) - len(line.split("|")[2].lstrip())) // 2
        if depth == 0:
            rows.append((name.strip(), int(cumulative) / 1000))
    return sorted(rows, key=lambda r: -r[1])[:top]


def _catalog_load_s(runs: int) -> list[float]:
    code = ("import time; from sizeup.hardware.catalog import load_catalog; t = time.perf_counter(); load_catalog(); "
            "print(time.perf_counter() - t)")
    return [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(),
                                 check=True).stdout) for _ in range(runs)]


def _spread(values: list[float]) -> tuple[float, float, float]:
    """(median, p10, p90)."""
    if len(values) < 2:
        return values[0], values[0], values[0]
    deciles = statistics.quantiles(values, n=10, method="inclusive")
    return statistics.median(values), deciles[0], deciles[-1]


def _cases() -> list[tuple[str, list[str]]]:
    """(label, argv): Python alone, the estimate as `python -m sizeup` and through the entry point, `--help`."""
    py = sys.executable
    cases = [("python -c pass", [py, "-c", "pass"]),
             ("python -m sizeup estimate … --json", [py, "-m", "sizeup", *ESTIMATE])]
    entry = _entry_point()
    if entry:
        cases.append(("sizeup estimate … --json (entry point)", [entry, *ESTIMATE]))
    cases.append(("python -m sizeup --help", [py, "-m", "sizeup", "--help"]))
    return cases


def _compare(base: Path, runs: int) -> None:
    """Every command from `base` and from this tree, in turn, `runs` pairs each."""
    global SRC
    py = sys.executable
    cases = _cases() + [("python -m sizeup estimate --help", [py, "-m", "sizeup", "estimate", "--help"]),
                        ("python -m sizeup plan examples/team-api-200-users.yaml --json",
                         [py, "-m", "sizeup", "plan", str(ROOT / "examples" / "team-api-200-users.yaml"), "--json"])]
    mine = SRC
    trees = [("base", base), ("this", mine)]
    print(f"start-up, base {base} against this tree {mine}, {runs} runs each, in turn\n")
    print("| command | tree | wall median (s) | wall p10 | wall p90 | CPU median (s) | CPU p10 | CPU p90 | CPU this/base |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, argv in cases:
        for _, src in trees:  # warm the file cache, the .pyc files and sizeup's caches of each tree
            SRC = src
            subprocess.run(argv, capture_output=True, env=_env())
        wall: dict[str, list[float]] = {"base": [], "this": []}
        cpu: dict[str, list[float]] = {"base": [], "this": []}
        for _ in range(runs):
            for name, src in trees:
                SRC = src
                t, c = _time(argv, 1)
                wall[name] += t
                cpu[name] += c
        ratio = statistics.median(b and a / b for a, b in zip(cpu["this"], cpu["base"]))
        for name, _ in trees:
            w, c = _spread(wall[name]), _spread(cpu[name])
            print(f"| {label} | {name} | {w[0]:.3f} | {w[1]:.3f} | {w[2]:.3f} | {c[0]:.3f} | {c[1]:.3f} | {c[2]:.3f} | "
                  + (f"{ratio:.3f} |" if name == "this" else " |"))
    SRC = mine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of each command (default 10)")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the sizeup sources to time (default ./src)")
    parser.add_argument("--base", type=Path, help="another tree's src/ to time against, in turn (e.g. ../main/src)")
    args = parser.parse_args()
    global SRC
    SRC = args.src
    if args.base is not None:
        _compare(args.base, args.runs)
        print()
    cases = _cases()
    for _, argv in cases:  # warm the file cache and the .pyc files
        subprocess.run(argv, capture_output=True, env=_env())
    print(f"start-up, {args.runs} runs each (target: estimate < {TARGET_S} s median)\n")
    print("| command | median (s) | min (s) | max (s) | CPU median (s) |")
    print("|---|---:|---:|---:|---:|")
    for label, argv in cases:
        t, cpu = _time(argv, args.runs)
        print(f"| {label} | {statistics.median(t):.3f} | {min(t):.3f} | {max(t):.3f} | {statistics.median(cpu):.3f} |")
    t = _catalog_load_s(min(args.runs, 5))
    print(f"| load_catalog() in process | {statistics.median(t):.3f} | {min(t):.3f} | {max(t):.3f} | |")
    print("\ncostliest imports of one estimate (python -X importtime, outermost, cumulative)\n")
    print("| module | ms |")
    print("|---|---:|")
    for name, ms in _imports(12):
        print(f"| {name} | {ms:.1f} |")


if __name__ == "__main__":
    main()
