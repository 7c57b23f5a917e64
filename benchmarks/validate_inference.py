"""Predicted vs published LLM inference measurements: every row of tests/validation/inference_measurements*.yaml is
the `sizeup estimate ...` command line its source's conditions give, run through sizeup's CLI (benchmarks/validation/),
nothing else.

Sets: base = inference_measurements.yaml with inference_measurements_tuned_*.yaml (its llama.cpp pp512 and tg rows
and the tuned_* rows are TUNED: data/efficiency/kernels.yaml's fractions were fit on them); devices = the other
inference_measurements_*.yaml files (CHECK rows, not used for any fit); vulkan = the llama.cpp Vulkan rows (TUNED and
CHECK, per vendor; rows with a `driver` (Mesa ANV 24.2.8) apart: a driver-era gap the estimate has no input for).
Targets (issue 4): median |error| <= 15% on decode tokens/s and <= 5% on memory; issue 18: llama.cpp prefill within
median 25% / p90 60% on CUDA and Apple.

Run from the repo root: python benchmarks/validate_inference.py [--set base|devices|all|vulkan] [--rows] [--loso]
[--vendor NAME] [--fit]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]

from validation import cli, rows, summary, tables  # noqa: E402

BASE = ("inference_measurements.yaml", "inference_measurements_tuned_*.yaml")
VULKAN = ("inference_measurements_vulkan.yaml",)
GROUPS = {"decode_tokens_per_s": "decode tokens/s", "total_decode_tokens_per_s": "batched throughput",
          "prefill_tokens_per_s": "prefill tokens/s", "model_file_bytes": "memory", "peak_memory_bytes": "memory"}


def files(which: str) -> list[Path]:
    base, vulkan = rows.files_named(*BASE), rows.files_named(*VULKAN)
    devices = [p for p in rows.files_named("inference_measurements_*.yaml") if p not in base + vulkan]
    return {"base": base, "devices": devices, "all": base + devices, "vulkan": vulkan}[which]


def vendor_of(result: summary.Result) -> str:
    from sizeup.hardware.catalog import load_catalog

    return load_catalog(include_user=False).device(result.context.device).vendor


def fit_report(selected: list[rows.Row]) -> None:
    """Per TUNED row: the figure it set, its value in the data file and the value that reproduces the row."""
    print("| id | figure | in the data file | reproduces the row |")
    print("|---|---|---:|---:|")
    for r in selected:
        key = tables.figure_key(r)
        if key:
            value = tables.implied(r, key)
            print(f"| {r.id} | {key} | {tables.committed(key):.4g} | {'-' if value is None else format(value, '.4g')} |")


def main() -> None:
    p = cli.parser(__doc__.splitlines()[0])
    p.add_argument("--set", choices=("base", "devices", "all", "vulkan"), default="base")
    p.add_argument("--vendor", help="only rows on this vendor's devices (nvidia, amd, intel, apple, ...)")
    p.add_argument("--fit", action="store_true", help="per TUNED row: the kernels.yaml figure that reproduces it")
    args = p.parse_args()
    selected = rows.load(files(args.set))
    if args.vendor:
        selected = [r for r in selected if vendor_of(summary.Result(r, summary.context(r), None)) == args.vendor]
    if args.fit:
        return fit_report(selected)
    print(f"set: {args.set} (TUNED rows set data-file figures; CHECK rows were not used for any fit)\n")
    metric = lambda r: f"{r.row.role}: {GROUPS[r.row.metric]}"  # noqa: E731
    groups = [("set: metric", metric)]
    if args.set == "vulkan":
        groups = [("set, vendor: metric", lambda r: f"{r.row.role}" + (f" ({r.row.get('driver')}: not modelled)"
                                                                         if r.row.get("driver") else "")
                   + f", {vendor_of(r)}: {GROUPS[r.row.metric]}")]
    cli.report(selected, groups, show_rows=args.rows, with_loso=args.loso)


if __name__ == "__main__":
    main()
