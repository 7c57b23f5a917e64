"""`sizeup plan` on every example, as a process and in-process (plan + sheet, the catalog loaded; target:
under 1.5 s each), wall-clock and CPU time (on a shared machine the CPU time is the one to read); then the
serving examples with every registered engine allowed (target: 2 s a plan on a quiet machine); then the
vision example twice in a fresh trace cache, first (traced) beside second (read from the cache), with
their outputs compared.

Run from the repo root: python benchmarks/plan_speed.py [--engines-only] [--base OTHER_CHECKOUT [--runs N]]
(--base: the every-engine plans of another checkout and this one in turn, e.g. --base /path/to/main)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VISION = ROOT / "examples" / "vision-inspection.yaml"


def run(path: Path, env: dict[str, str]) -> tuple[float, float, int, str, float]:
    """Seconds, peak memory (MB) and exit code of `sizeup plan PATH` as a process, what it printed, and the
    CPU seconds it used."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, "-m", "sizeup", "plan", str(path)], stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read() or err.read().strip()
    return elapsed, usage.ru_maxrss / 1024, proc.returncode, text, usage.ru_utime + usage.ru_stime


def examples(env: dict[str, str]) -> None:
    print("| example | process wall (s) | process CPU (s) | exit code | headline |")
    print("|---|---:|---:|---:|---|")
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        elapsed, _, code, text, cpu = run(path, {**env, "SIZEUP_NO_CACHE": "1"})  # cold: traces every time
        lines = text.splitlines()
        verdict = lines[2] if len(lines) > 2 else text
        print(f"| {path.stem} | {elapsed:.2f} | {cpu:.2f} | {code} | {verdict[:160]} |")


def every_engine(env: dict[str, str], base: Path | None = None, runs: int = 3) -> None:
    """The serving examples with `constraints.engines` set to every registered engine, as processes; with `base`
    (another checkout, e.g. the landed tree) each is run there and here in turn, `runs` pairs, medians quoted and
    the two outputs compared."""
    sys.path.insert(0, str(ROOT / "src"))
    from sizeup.engines.base import engine_names

    names = list(engine_names())
    if base:  # the engines both trees register, so that the two plans search the same engines
        listed = subprocess.run([sys.executable, "-c", "from sizeup.engines.base import engine_names; "
                                 "print(' '.join(engine_names()))"], env={**env, "PYTHONPATH": str(base / "src")},
                                capture_output=True, text=True, check=True).stdout.split()
        names = [n for n in names if n in listed]
    engines = ", ".join(names)
    trees = ([("base", {**env, "PYTHONPATH": str(base / "src")})] if base else []) + [("this tree", env)]
    print()
    print("| serving example, every engine | tree | process wall (s) | process CPU (s) | exit code | headline |")
    print("|---|---|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as folder:
        for name in ("team-api-200-users", "api-70b-p99-ttft"):
            text = (ROOT / "examples" / f"{name}.yaml").read_text()
            path = Path(folder) / f"{name}.yaml"
            path.write_text(text.replace("engines: [vllm]", f"engines: [{engines}]"))
            times: dict[str, list] = {label: [] for label, _ in trees}
            for _ in range(runs if base else 1):  # in turn, so a drift in the machine's speed hits both
                for label, tree_env in trees:
                    times[label].append(run(path, tree_env))
            outputs = {label: got[0][3] for label, got in times.items()}
            for label, got in times.items():
                wall, cpu = statistics.median(g[0] for g in got), statistics.median(g[4] for g in got)
                lines = got[0][3].splitlines()
                same = "" if not base or label == "base" else (
                    " (output identical to base)" if outputs[label] == outputs["base"] else " (output DIFFERS)")
                print(f"| {name} | {label}{same} | {wall:.2f} | {cpu:.2f} | {got[0][2]} | "
                      f"{(lines[2] if len(lines) > 2 else got[0][3])[:120]} |")


def in_process() -> None:
    """Plan and sheet of every example in this process, the catalog already loaded: wall and CPU seconds."""
    sys.path.insert(0, str(ROOT / "src"))
    from sizeup.hardware.catalog import load_catalog
    from sizeup.plan.recommend import plan_scenario
    from sizeup.plan.scenario import load_scenario
    from sizeup.plan.sheet import build_sheet

    catalog = load_catalog(include_user=False)
    print()
    print("| example, in-process | plan + sheet wall (s) | CPU (s) | under 1.5 s |")
    print("|---|---:|---:|---|")
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        scenario = load_scenario(path)
        best_wall, best_cpu = float("inf"), float("inf")
        for _ in range(2):  # the better of two runs (the first also warms the trace cache of the vision model)
            t0, c0 = time.perf_counter(), time.process_time()
            build_sheet(plan_scenario(scenario, catalog))
            best_wall = min(best_wall, time.perf_counter() - t0)
            best_cpu = min(best_cpu, time.process_time() - c0)
        print(f"| {path.stem} | {best_wall:.2f} | {best_cpu:.2f} | {'yes' if best_cpu < 1.5 else 'NO'} |")


def vision_cache(env: dict[str, str]) -> None:
    """First and second vision plan as processes in one fresh trace cache."""
    print()
    print("| vision-inspection, fresh cache | process (s) | peak memory (MB) | exit code | output |")
    print("|---|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as cache:
        env = {k: v for k, v in env.items() if k != "SIZEUP_NO_CACHE"} | {"SIZEUP_CACHE_DIR": cache}
        first = None
        for label in ("first (traced)", "second (from the cache)"):
            elapsed, peak, code, text, _ = run(VISION, env)
            same = "" if first is None else ("identical to the first" if text == first else "DIFFERS from the first")
            first = text if first is None else first
            print(f"| {label} | {elapsed:.2f} | {peak:.0f} | {code} | {same} |")


def main() -> None:
    parser = argparse.ArgumentParser(description="sizeup plan speed")
    parser.add_argument("--base", type=Path, help="another checkout to time the every-engine plans against, in turn")
    parser.add_argument("--engines-only", action="store_true", help="only the every-engine plans")
    parser.add_argument("--runs", type=int, default=3, help="pairs of runs with --base (medians quoted)")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    if not args.engines_only:
        examples(env)
    every_engine(env, args.base, args.runs)
    if not args.engines_only:
        in_process()
        vision_cache(env)


if __name__ == "__main__":
    main()
