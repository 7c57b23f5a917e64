"""Quantization of a model's weights as a job sees it: the bytes of its weights under a format, by
tensor role. The formats themselves (block layouts, byte rules, GGUF's K-quant mixes) are data
the lower layers need too, and live in `sizeup.formats`; their names are re-exported here.
"""

from __future__ import annotations

from sizeup.formats import (FORMATS, GGUF_BLOCKS, LINEAR_ROLES, WeightFormat, get_format, gguf_type, nf4_matrix_bytes,
                            tensor_bytes, tensor_bytes_map)
from sizeup.ingest.arch import ModelArch

__all__ = ["GGUF_BLOCKS", "WeightFormat", "FORMATS", "get_format", "gguf_type", "tensor_bytes", "tensor_bytes_map",
           "weight_bytes", "nf4_matrix_bytes", "LINEAR_ROLES"]


def weight_bytes(arch: ModelArch, fmt: WeightFormat) -> dict[str, int]:
    """Bytes of the model's weights under `fmt`, by tensor role."""
    sizes = tensor_bytes_map(arch, fmt)
    out: dict[str, int] = {}
    for t in arch.tensors():
        out[t.role] = out.get(t.role, 0) + sizes[t.name]
    return out
