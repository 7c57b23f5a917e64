"""Predicted vs published ResNet-50 and YOLO images/s (vision_measurements.yaml, rows_vision_check.yaml): each row is the `sizeup
roofline sizeup.examples.zoo:resnet50 --input Bx3x224x224 --dtype D --device NAME --runtime R` command of its source's
setup; the figure is batch / devices[0].time_s. TUNED rows set overheads.yaml figures (pytorch-eager's per-op time,
Volta's convolution tiles); CHECK rows were only compared. Targets (issue 18): batch 1 within 25%, large batch
(>= 256) within 15%, median over the check rows. Needs torch (the model is traced). rows_vision_check.yaml adds
Ultralytics YOLOv8 / YOLO11 detect, classify and pose models (sizeup.examples.yolo, yolo11) on T4, A100 and RTX 4080
with TensorRT, grouped by model family.

A row's runtime fixes the layout cuDNN sees: pytorch-eager / pytorch-eager-amp hand it NCHW tensors (a tensor-core
conv then runs an NCHW->NHWC transform kernel first, price/conv_algos.py), the -channels-last runtime and
torch-compile NHWC.
Run from the repo root: python benchmarks/validate_vision.py [--rows] [--loso]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]

from validation import cli, rows  # noqa: E402

FAMILY = {"tensorrt": "fused engine", "tensorrt-cuda-graphs": "fused engine", "onnxruntime": "fused engine",
          "torch-compile": "compiled"}


def group(r) -> str:
    batch = r.row.argv[r.row.argv.index("--input") + 1].split("x")[0]
    model = "yolo" if ".yolo" in r.row.argv[2] else "resnet50"
    return (f"{r.row.role}, {model}, {'batch 1' if batch == '1' else 'large batch'}, "
            f"{FAMILY.get(r.context.engine, 'pytorch eager')}")


def main() -> None:
    args = cli.parser(__doc__.splitlines()[0]).parse_args()
    cli.report(rows.load(rows.files_named("vision_measurements.yaml", "rows_vision_check.yaml")),
               [("set, model, batch, runtime", group)],
               show_rows=True, with_loso=args.loso)


if __name__ == "__main__":
    main()
