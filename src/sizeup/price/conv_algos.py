"""What cuDNN runs around a convolution besides its main kernel: the layout transform of an NCHW input.

cuDNN's tensor-core convolution kernels read NHWC activations and KRSC filters. Handed contiguous NCHW
tensors (PyTorch's default layout), cuDNN first runs a transpose kernel over the input and the filter
(`cudnn::engines_precompiled::nchwToNhwcKernel`), then a kernel that reads NHWC and writes the output
straight back in NCHW (`sm80_xmma_fprop_implicit_gemm_..._nhwckrsc_nchw`: NHWC input, KRSC filter, NCHW
output), as profiles of eager PyTorch convolutions on Ampere/Ada/Blackwell show. So an NCHW tensor-core
convolution moves its input (and filter) twice more, read and written once by one extra kernel that runs
before it: memory-bound time that adds to the convolution's, and one more launch. SIMT (FFMA) kernels
read NCHW natively (`implicit_convolve_sgemm`), and channels-last tensors (`x.to(memory_format=
torch.channels_last)`, inductor's layout optimisation) need no transform.

What cuDNN runs for a 3x3 stride-1 FP32 convolution on the FP32 cores (no tensor-core path: Volta/Turing,
a part without TF32, or TF32 off): with `cudnn.benchmark = True` (DeepLearningExamples, timm's benchmark)
cuDNN times every algorithm and keeps the fastest, and for these convolutions that includes Winograd
(Lavin & Gray 2015, arXiv:1509.09308): F(m x m, 3x3) computes an m x m output tile from an (m+2) x (m+2)
input tile with (m+2)^2 multiplies instead of 9 m^2, so F(2x2,3x3) needs 2.25x and F(4x4,3x3) 4x fewer.
`winograd` prices the two forms cuDNN ships (CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, a fused kernel whose
transforms stay on chip, taken here as F(2x2,3x3); WINOGRAD_NONFUSED, taken as F(4x4,3x3), whose
transformed input, filter and output go through memory: (m+2)^2/m^2 = 2.25x the tensors, written by a
transform kernel and read by the batched GEMM, and the same for the output) next to the direct
convolution, and keeps the cheapest at the typical efficiency, as the benchmark mode does. The input and
filter transforms are counted together as 2.25x the bytes the convolution reads (the filter is a small
share at the batch sizes where this matters). Tensor-core convolutions are left alone.
"""

from __future__ import annotations

import numpy as np

from sizeup.ledger import OpKind

__all__ = ["layout_transform", "winograd"]

FUSED_REDUCTION = 36 / 16  # F(2x2,3x3): 9·4 multiplies direct vs 16 (Lavin & Gray 2015)
NONFUSED_REDUCTION = 9 * 16 / 36  # F(4x4,3x3): 9·16 direct vs 36
NONFUSED_EXPANSION = 36 / 16  # a 6x6 transformed tile per 4x4 output tile
NONFUSED_KERNELS = 3  # filter, input and output transforms


def layout_transform(arrays, runtime, tensor_units: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, kernels) per op of the NCHW→NHWC transform that runs before each tensor-core convolution
    when `runtime` hands cuDNN NCHW tensors; zeros elsewhere. `tensor_units[c]` is the unit ('tensor' or
    'vector') tensor class c runs on."""
    n = len(arrays.ledger.ops)
    moved, kernels = np.zeros(n), np.zeros(n)
    if runtime is None or runtime.conv_layout != "nchw":
        return moved, kernels
    for i, o in enumerate(arrays.ledger.ops):
        c = arrays.tensor_class[i]
        if o.kind == OpKind.CONV and o.matmul_flops and c >= 0 and tensor_units[c] == "tensor":
            moved[i] = 2.0 * o.bytes_read * o.count  # the input and filter, read once and written once
            kernels[i] = float(o.count)
    return moved, kernels


def winograd(arrays, device, rates, tensor_units: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(matrix FLOPs, extra serial bytes, extra kernels) per op after cuDNN's choice of algorithm for the
    3x3 stride-1 forward FP32 convolutions that run on the FP32 cores of a GPU (`tensor_units[c]` is the
    unit tensor class c runs on), and how many took a Winograd form; other ops unchanged. `rates` is
    price.rates.InverseRates: the choice compares times at the typical efficiency."""
    flops = arrays.tensor_flops.copy()
    n = len(flops)
    serial, kernels, chosen = np.zeros(n), np.zeros(n), 0
    if device.kind != "gpu":
        return flops, serial, kernels, chosen
    per_byte = rates.bandwidth[1]
    for i, o in enumerate(arrays.ledger.ops):
        c = arrays.tensor_class[i]
        if (o.kind != OpKind.CONV or c < 0 or tensor_units[c] != "vector" or o.dtype != "fp32"
                or o.conv_kernel != (3, 3) or o.conv_stride != (1, 1) or not o.matmul_flops):
            continue
        per_flop = rates.tensor[1][c]
        direct = flops[i] * per_flop
        fused = flops[i] / FUSED_REDUCTION * per_flop
        moved = 2.0 * NONFUSED_EXPANSION * (o.bytes_read + o.bytes_written) * o.count
        nonfused = flops[i] / NONFUSED_REDUCTION * per_flop + moved * per_byte
        best = min(direct, fused, nonfused)
        if best == direct:
            continue
        chosen += 1
        if best == fused:
            flops[i] /= FUSED_REDUCTION
        else:
            flops[i] /= NONFUSED_REDUCTION
            serial[i], kernels[i] = moved, NONFUSED_KERNELS * o.count
    return flops, serial, kernels, chosen
