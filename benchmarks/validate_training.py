"""Predicted vs published training and fine-tuning measurements (tests/validation/training_measurements.yaml): every
row is the `sizeup train ...` command line its source's conditions give (the framework's profile named with
--framework, a recipe's stated settings as flags, configs given by the source as tests/validation/configs/*.json),
run through sizeup's CLI (benchmarks/validation/), nothing else.

Targets (issue 5): median |error| <= 15% on throughput / MFU and <= 10% on peak memory. Rows with role check were not
tuned on; rows marked off_catalog ran on hardware whose peak is unpublished and are summarised apart (a dagger).
Run from the repo root: python benchmarks/validate_training.py [--rows] [--loso]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]

from validation import cli, rows  # noqa: E402

FILES = ("training_measurements.yaml",)
GROUPS = {"mfu": "throughput", "tokens_per_s_per_gpu": "throughput", "step_time_s": "throughput",
          "peak_memory_bytes": "memory"}


def group(r) -> str:
    return GROUPS[r.row.metric] + (", off-catalog hardware" if r.row.get("off_catalog") else "")


def main() -> None:
    args = cli.parser(__doc__.splitlines()[0]).parse_args()
    selected = rows.load(rows.files_named(*FILES))
    cli.report(selected, [
        ("metric", group),
        ("metric, set", lambda r: f"{group(r)}, {r.row.role} set"),
        ("llm-foundry MPT", lambda r: f"{r.context.device}" if r.row.source == "llm-foundry-benchmarks" else None),
        ("metric, source", lambda r: f"{group(r)}: {r.row.source}"),
    ], show_rows=args.rows, with_loso=args.loso, columns=("role", "device", "engine"))
    off = next((r.get("off_catalog") for r in selected if r.get("off_catalog")), None)
    if args.rows and off:
        print(f"† off-catalog hardware: {off}")


if __name__ == "__main__":
    main()
