"""Predicted vs published decode of torch.compile (static cache, CUDA graphs; bf16 and torchao weight-only int8 / fp8 /
int4) and of bitsandbytes under transformers (LLM.int8(), NF4): tests/validation/rows_torch_compile.yaml and
rows_bnb.yaml (and the torch.compile rows of the held-out rows_check_1205.yaml and rows_check_1206_local.yaml), each row the `sizeup estimate ...`
command of its source's setup.
Run from the repo root: python benchmarks/validate_quant_engines.py [--rows] [--loso]

--loso: leave-one-source-out for the figures these rows set (data/engines/torch-compile.yaml decode_memory_fraction.*
and quantized_on_device_reserved, data/engines/hf.yaml bnb_*_linear_host_s), through the registry of
validation/engine_fits.py that ACCURACY.md's leave-one-source-out reads too.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]

from validation import cli, rows


def main() -> None:
    p = cli.parser(__doc__.splitlines()[0])
    args = p.parse_args()
    selected = rows.load(rows.files_named("rows_torch_compile.yaml", "rows_bnb.yaml")) + [
        r for r in rows.load(rows.files_named("rows_check_1205.yaml", "rows_check_1206_local.yaml")) if rows.engine_of(r.argv) == "torch-compile"]
    cli.report(selected, [("file and set", lambda r: f"{r.row.file.removesuffix('.yaml')} {r.row.role}"),
                          ("metric and set", lambda r: f"{r.row.metric} {r.row.role}")],
               show_rows=args.rows, with_loso=args.loso, columns=("role", "device", "engine"))


if __name__ == "__main__":
    main()
