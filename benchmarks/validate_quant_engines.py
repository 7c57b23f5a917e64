"""Predicted vs published decode of torch.compile (static cache, CUDA graphs; bf16 and torchao weight-only int8 / fp8 /
int4) and of bitsandbytes under transformers (LLM.int8(), NF4): tests/validation/rows_torch_compile.yaml and
rows_bnb.yaml (and the torch.compile row of the held-out rows_check_1205.yaml), each row the `sizeup estimate ...`
command of its source's setup.
Run from the repo root: python benchmarks/validate_quant_engines.py [--rows] [--refit]

--refit: leave-one-source-out for the figures these rows set (data/engines/torch-compile.yaml decode_memory_fraction.*
and quantized_on_device_reserved, data/engines/hf.yaml bnb_*_linear_host_s): each tuned row's implied value (the figure at which its own command
reproduces it, by bisection), the figure set again as the median of the other sources' implied values (none left:
the entry dropped, the engine's fallback), and the left-out source's rows priced with it. Writes the data files in
place while it runs and restores them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]

from validation import cli, rows  # noqa: E402
from validation.engine_fits import ENGINE_FITS  # noqa: E402

DATA = ROOT / "src" / "sizeup" / "data" / "engines"
FIGURES = {rid: (f"{name}.yaml", setting, setting.endswith("_s"))
           for (name, setting), ids in ENGINE_FITS.items() if name in ("torch-compile", "hf") for rid in ids}
"""Tuned row id -> (data file, figure, whether its figure falls as the figure grows: a host time), from
validation/engine_fits.py (shared with tables.py's leave-one-source-out)."""
BOUNDS = {"quantized_on_device_reserved": (0.0, 2.0)}
"""Bisection bounds of a figure that is not a bandwidth fraction (0.05-1) or a host time (1e-6-3e-3 s)."""


def _decode(row: rows.Row, changes: dict[str, dict[str, float | None]]) -> float:
    """The row's figure (decode tokens/s, or the memory total of a memory row) with `changes` written in."""
    saved = {name: (DATA / name).read_text() for name in changes}
    try:
        for name, figures in changes.items():
            text = saved[name]
            for key, value in figures.items():
                text = _with(text, key, value)
            (DATA / name).write_text(text)
        command = [sys.executable, "-m", "sizeup", *shlex.split(row.command)[1:], "--json"]
        out = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT / "src")}).stdout
    finally:
        for name, text in saved.items():
            (DATA / name).write_text(text)
    result = json.loads(out)
    if row.metric.startswith("peak_memory"):
        return float(result["memory"]["total_bytes"])
    return result["decode"]["per_sequence_tokens_per_s"]["typical"]


def _implied(row: rows.Row, name: str, key: str, falls: bool) -> float:
    lo, hi = BOUNDS.get(key) or ((1e-6, 3e-3) if falls else (0.05, 1.0))
    for _ in range(16):
        mid = (lo + hi) / 2
        if (_decode(row, {name: {key: mid}}) < row.value) != falls:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def refit(selected: list[rows.Row]) -> None:
    tuned = {r.id: r for r in selected if r.id in FIGURES}
    implied = {rid: _implied(r, *FIGURES[rid]) for rid, r in tuned.items()}
    print("| left out | row | figure | refit without the source | measured | predicted | error |")
    print("|---|---|---|---:|---:|---:|---:|")
    errors = []
    for source in sorted({r.source for r in tuned.values()}):
        changes: dict[str, dict[str, float | None]] = {}
        for name, key, _ in set(FIGURES.values()):
            others = [implied[rid] for rid, r in tuned.items() if FIGURES[rid][1] == key and r.source != source]
            if any(FIGURES[rid][1] == key and r.source == source for rid, r in tuned.items()):
                changes.setdefault(name, {})[key] = statistics.median(others) if others else None
        for r in (r for r in tuned.values() if r.source == source):
            value = changes[FIGURES[r.id][0]][FIGURES[r.id][1]]
            p = _decode(r, changes)
            errors.append(abs(p / r.value - 1))
            print(f"| {source} | {r.id} | {FIGURES[r.id][1]} | {'dropped' if value is None else f'{value:.4g}'} | "
                  f"{r.value:.4g} | {p:.4g} | {p / r.value - 1:+.1%} |")
    errors.sort()
    print(f"\nleave-one-source-out over {len(errors)} tuned rows: median |error| {statistics.median(errors):.1%}, "
          f"p90 {errors[min(len(errors) - 1, round(0.9 * (len(errors) - 1)))]:.1%}")


def main() -> None:
    p = cli.parser(__doc__.splitlines()[0])
    p.add_argument("--refit", action="store_true", help="leave-one-source-out for this file's own figures")
    args = p.parse_args()
    selected = rows.load(rows.files_named("rows_torch_compile.yaml", "rows_bnb.yaml")) + [
        r for r in rows.load(rows.files_named("rows_check_1205.yaml")) if rows.engine_of(r.argv) == "torch-compile"]
    cli.report(selected, [("file and set", lambda r: f"{r.row.file.removesuffix('.yaml')} {r.row.role}"),
                          ("metric and set", lambda r: f"{r.row.metric} {r.row.role}")],
               show_rows=args.rows, with_loso=args.loso, columns=("role", "device", "engine"))
    if args.refit:
        refit(selected)


if __name__ == "__main__":
    main()
