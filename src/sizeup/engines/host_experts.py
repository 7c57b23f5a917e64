"""Routed experts an engine keeps in host memory, copied to the GPU for a long prompt: llama.cpp's `--n-cpu-moe`
(ggml's op offload copies each physical batch's MUL_MAT_ID weights) and kt-kernel's layerwise GPU prefill (each
chunk copies the CPU-held experts). One copy after another, not overlapped with compute."""

from __future__ import annotations

from sizeup.formats import get_format, tensor_bytes_map

__all__ = ["expert_copies"]


def expert_copies(arch, weights: str, layers: int, fraction: float, tokens: int, chunk: int,
                  link: float) -> tuple[float, float, int]:
    """(bytes one copy moves, seconds of all copies, copies) of a `tokens`-token prompt in chunks of `chunk`: the
    routed expert tensors of the first `layers` layers, `fraction` of each (the share held in host memory), over a
    host link of `link` bytes/s one way."""
    sizes = tensor_bytes_map(arch, get_format(weights))
    moved = fraction * sum(sizes[t.name] for t in arch.tensors() if t.role == "expert" and t.layer is not None
                           and t.layer < layers)
    copies = -(-tokens // chunk)
    return moved, copies * moved / link, copies
