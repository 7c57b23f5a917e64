"""Predicted vs published figures of the local engines (issue 28): MLX, ExLlamaV2 / ExLlama, MLC-LLM (and the Jetson
rows beside them), Ollama, and the local engines' rows of the held-out rows_check_1205.yaml (llama.cpp among them), from
the research rows of tests/validation/rows_*.yaml (ROWS_README.md), each row the
command line its `argv` states, priced through the validation runner (benchmarks/validation/runner.py).

Prints, per engine: the rows answerable (the command runs and prices) and unanswerable (with the one-line reason),
then median / p90 |error| by metric kind on tuned and on check rows, then by engine and device class (edge: Jetson and
Raspberry Pi; apple; consumer; workstation; datacenter: hardware/segments.py), every kind and role together. `--loso`: every figure the engines' data files
fit on tuned rows (FITTED below, each with the rows its basis names) is set again without each source, by the
files' own rule (the median of the other sources' implied values; none left: the key dropped, so the device default
applies), and that source's rows are priced with it.
Run from the repo root: python benchmarks/validate_local_engines.py [--rows] [--loso]
"""

from __future__ import annotations

import contextlib
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]

import yaml  # noqa: E402

from validation import runner, summary  # noqa: E402
from validation.engine_fits import ENGINE_FITS, engine_values, key_of  # noqa: E402
from validation.rows import ROW_DIR, Row  # noqa: E402

FILES = ("rows_mlx.yaml", "rows_exllamav2.yaml", "rows_mlc_jetson.yaml", "rows_sglang_ollama_vllm_versions.yaml",
         "rows_check_1205.yaml", "rows_local_1205b.yaml", "rows_check_1206_local.yaml",
         "rows_check_1206_audit3.yaml")
ENGINES = {"mlx": "mlx", "mlx-benchmark": "mlx", "exllamav2": "exllamav2", "exllama": "exllama", "mlc": "mlc",
           "ollama": "ollama", "llama.cpp": "llama.cpp (Jetson and held-out rows)"}

FITTED = {fig: ids for fig, ids in ENGINE_FITS.items() if fig[0] in ("mlx", "exllama", "mlc")}
"""(data file, setting): the tuned rows its basis names (validation/engine_fits.py, shared with tables.py's LOSO)."""
DROPPED = object()


def research_rows() -> list[Row]:
    """The rows of FILES on the local engines, as the runner's rows. A file still in the research layout names its
    command `argv`, its source `source_key` and its reference `source`; a runner row file `command`, `source`,
    `reference` (rows_mlx.yaml and rows_exllamav2.yaml: docs/validation.md)."""
    out = []
    for name in FILES:
        for raw in yaml.safe_load((ROW_DIR / name).read_text()):
            if raw["engine"] not in ENGINES:
                continue
            if "command" in raw:
                raw = {**raw, "argv": raw["command"], "source_key": raw["source"], "source": raw["reference"]}
            extra = {k: v for k, v in raw.items()
                     if k not in ("id", "source_key", "role", "argv", "command", "metric", "value", "source")}
            extra["reference"] = raw["source"]
            metric = "peak_memory_bytes@estimate" if raw["metric"] == "peak_memory_bytes" else raw["metric"]
            out.append(Row(id=raw["id"], file=name, source=raw["source_key"], role=raw["role"], command=raw["argv"],
                           metric=metric, value=float(raw["value"]), extra=extra))
    return out


@contextlib.contextmanager
def settings(overrides: dict):
    """The engines' profiles with `overrides` ((file, key) -> value, or DROPPED) in place of their data."""
    values = {key_of(fig): None if v is DROPPED else v for fig, v in overrides.items()}
    label = repr(sorted((k, str(v)) for k, v in overrides.items()))
    with engine_values(values), runner.state(label):
        yield


def implied(row: Row, figure: tuple[str, str]) -> float:
    """The value of `figure` at which `row`'s own command reproduces its measurement (bisection; a time's value or
    an instruction count lowers the rate)."""
    slows = figure[1].endswith("_s") or "_ops_per_" in figure[1]  # a time or a count of instructions lowers the rate
    low, high = (0.0, 3.0) if figure[1].endswith("_s") else (0.5, 30.0) if slows else (0.05, 1.5)
    for _ in range(25):
        mid = (low + high) / 2
        with settings({figure: mid}):
            rate = runner.predict(row).typical
        if (rate < row.value) == slows:
            high = mid
        else:
            low = mid
    return (low + high) / 2


def loso(rows: list[Row]) -> list[summary.Result]:
    by_id = {r.id: r for r in rows}
    values = {fig: {i: implied(by_id[i], fig) for i in ids} for fig, ids in FITTED.items()}
    out = []
    for row in rows:
        if row.role != "tuned":
            continue
        overrides, fallback = {}, False
        for fig, ids in FITTED.items():
            if not any(by_id[i].source == row.source for i in ids):
                continue
            rest = [v for i, v in values[fig].items() if by_id[i].source != row.source]
            overrides[fig] = statistics.median(rest) if rest else DROPPED
            fallback |= not rest
        with settings(overrides):
            out.append(summary.Result(row=row, context=runner.context(row), predicted=runner.predict(row),
                                      fallback=fallback))
    return out


def main() -> None:
    from validation import cli

    args = cli.parser(__doc__.splitlines()[0]).parse_args()
    rows, answerable = research_rows(), []
    for row in rows:
        try:
            runner.predict(row)
            answerable.append(row)
        except runner.RowError as e:
            print(f"not answerable: {row.id} ({row.role}): {str(e).split(': ', 1)[-1][-140:]}")
    print()
    for engine in sorted(set(ENGINES.values())):
        mine = [r for r in rows if ENGINES[r.get("engine")] == engine]
        for role in ("tuned", "check"):
            n = [r for r in mine if r.role == role]
            ok = [r for r in n if r in answerable]
            print(f"{engine}: {role} {len(ok)}/{len(n)} answerable")
    print()

    def key(res: summary.Result) -> str:
        return f"{ENGINES[res.row.get('engine')]} {res.context.kind} {res.row.role}"

    results = summary.evaluate(answerable)
    if args.rows:
        print(summary.rows_table(results, ("role", "device", "engine")))
        print()
    print(summary.table(results, key, "engine, kind, role"))
    print()
    print(summary.table(results, lambda r: f"{ENGINES[r.row.get('engine')].split(' (')[0]} {r.context.device_class}",
                        "engine, device class (tuned and check)"))
    if args.loso:
        print()
        print(summary.table(loso(answerable), lambda r: f"{ENGINES[r.row.get('engine')]} {r.context.kind} tuned",
                            "engine, kind (tuned rows, leave-one-source-out)"))


if __name__ == "__main__":
    main()
