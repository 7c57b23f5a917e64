"""Predicted vs published tower latency, three check sets (nothing in sizeup was tuned on them): a vision-language
model's vision tower (tower_measurements.yaml: TensorRT-LLM's visual engine, timm's CLIP ViT-L/14), SigLIP so400m
(siglip_tower_measurements.yaml, timm), and Whisper's encoder (whisper_encoder_measurements.yaml, whisper.cpp
`whisper-bench`, priced as --engine llama.cpp with the row's --backend). Each row is a `sizeup estimate CONFIG
--images 1 --batch IMAGES ...` (or `--batch 1` for Whisper) command; the figure is the estimate's tower.latency_s.
Run from the repo root: python benchmarks/validate_towers.py [--rows]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]

from validation import cli, rows  # noqa: E402

FILES = ("tower_measurements.yaml", "siglip_tower_measurements.yaml", "whisper_encoder_measurements.yaml")


def backend(r) -> str:
    argv = r.row.argv
    return argv[argv.index("--backend") + 1] if "--backend" in argv else r.context.engine


def main() -> None:
    args = cli.parser(__doc__.splitlines()[0]).parse_args()
    cli.report(rows.load(rows.files_named(*FILES)),
               [("file", lambda r: r.row.file), ("file, backend", lambda r: f"{r.row.file}: {backend(r)}")],
               show_rows=True, with_loso=args.loso)


if __name__ == "__main__":
    main()
