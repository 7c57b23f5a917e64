"""Predicted vs published decode of torch.compile (static cache, CUDA graphs; bf16 and torchao weight-only int8 / fp8 /
int4) and of bitsandbytes under transformers (LLM.int8(), NF4): tests/validation/rows_torch_compile.yaml and
rows_bnb.yaml, each row the `sizeup estimate ...` command of its source's setup.
Run from the repo root: python benchmarks/validate_quant_engines.py [--rows] [--loso]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]

from validation import cli, rows  # noqa: E402


def main() -> None:
    args = cli.parser(__doc__.splitlines()[0]).parse_args()
    selected = rows.load(rows.files_named("rows_torch_compile.yaml", "rows_bnb.yaml"))
    cli.report(selected, [("file and set", lambda r: f"{r.row.file.removesuffix('.yaml')} {r.row.role}"),
                          ("metric and set", lambda r: f"{r.row.metric} {r.row.role}")],
               show_rows=args.rows, with_loso=args.loso, columns=("role", "device", "engine"))


if __name__ == "__main__":
    main()
