"""Predicted vs published encoder serving throughput (tests/validation/encoder_measurements.yaml, a check set): BERT
on an A100 under a plain TensorRT engine, each row the `sizeup estimate MODEL --engine tensorrt --batch B --prompt
SEQ --output 0` command of its source's setup (one prefill: batch x sequence tokens through the encoder).
Run from the repo root: python benchmarks/validate_encoder.py [--rows]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]

from validation import cli, rows  # noqa: E402


def main() -> None:
    args = cli.parser(__doc__.splitlines()[0]).parse_args()
    cli.report(rows.load(rows.files_named("encoder_measurements.yaml")), [("set", lambda r: f"{r.row.role} set")],
               show_rows=True, with_loso=args.loso)


if __name__ == "__main__":
    main()
