"""Predicted vs published decode of state-space models (tests/validation/ssm_measurements.yaml) and, with
--hf-eager, of Llama-class models under transformers' eager generate() (inference_measurements_hf_eager.yaml). Every
row is a CHECK row and the `sizeup estimate ...` command of its source's setup (the engine a stand-in where the row
says so: mamba_ssm's CUDA-graph decode priced as vllm).
Run from the repo root: python benchmarks/validate_ssm.py [--hf-eager]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]

from validation import cli, rows  # noqa: E402


def main() -> None:
    p = cli.parser(__doc__.splitlines()[0])
    p.add_argument("--hf-eager", action="store_true")
    args = p.parse_args()
    name = "inference_measurements_hf_eager.yaml" if args.hf_eager else "ssm_measurements.yaml"
    cli.report(rows.load(rows.files_named(name)), [("set", lambda r: f"{r.row.role} set, engine {r.context.engine}")],
               show_rows=True, with_loso=args.loso)


if __name__ == "__main__":
    main()
