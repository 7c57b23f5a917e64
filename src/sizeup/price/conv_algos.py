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
"""

from __future__ import annotations

import numpy as np

from sizeup.ledger import OpKind

__all__ = ["layout_transform"]


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
