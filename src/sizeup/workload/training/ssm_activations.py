"""Activations a state-space (Mamba / Mamba-2) layer keeps for its backward pass.

A Mamba block is an RMSNorm, the mixer and the residual add (Gu & Dao 2023, arXiv:2312.00752, §3.4 and
Figure 3; Mamba-2: Dao & Gu 2024, arXiv:2405.21060, §7 and Figure 6). What it keeps depends on which scan
runs, a stated choice (TrainingConfig.ssm_scan):

- "fused": the hardware-aware kernels of mamba_ssm, which transformers' MambaMixer / Mamba2Mixer call in
  training when mamba-ssm and causal-conv1d are installed. Gu & Dao 2023 §3.3 ("we do not store the
  intermediate states ... they are recomputed in the backward pass when the inputs are loaded from HBM to
  SRAM"): no (batch, length, inner, state) tensor is kept, so the layer is linear in the length.
- "naive": the PyTorch reference scan (transformers' `slow_forward` / `torch_forward`, taken without those
  packages), which materialises the discretised A and B and the state of every step for autograd.

Every count is per layer, in elements of the activation dtype unless it says fp32 (4 bytes); T = batch ×
length tokens, h the hidden size, D the mixer width (inner), N the state size, r Mamba-1's time-step rank,
G Mamba-2's groups, H its heads. The norm's input and in_proj's input (the norm's output, which the product
keeps for its weight gradient) are counted in every variant; the residual add keeps nothing.
"""

from __future__ import annotations

from sizeup.ingest.arch import LayerSpec, ModelArch, SSMSpec

__all__ = ["SCAN_CHUNK_TOKENS", "ssm_layer_activation_bytes"]

SCAN_CHUNK_TOKENS = 2048
"""mamba_ssm's selective_scan_fwd keeps the scan state at the end of each chunk of 2048 tokens, an fp32
tensor it returns as `scan_intermediates` and MambaInnerFn saves for backward (csrc/selective_scan/
selective_scan.cpp: n_chunks = (seqlen + 2048 - 1) / 2048; x = empty({batch, dim, n_chunks, dstate * 2},
weight_type))."""


def _in_width(s: SSMSpec) -> int:
    """in_proj's output: x and z (Mamba-1); z, x, B, C and dt (Mamba-2)."""
    return 2 * s.inner if s.version == 1 else s.inner + s.conv_channels + s.heads


def _fused(s: SSMSpec, b: int, seq: int, a: int) -> int:
    """mamba_ssm's fused path at its default checkpoint level 1 (conv1d output and Δ recomputed in backward).

    Mamba-1, `mamba_inner_fn` (ops/selective_scan_interface.py, MambaInnerFn.forward's save_for_backward):
    xz, the in_proj output (2D); x_dbl, the x_proj output (r + 2N); contiguous copies of B and C (2N); the
    scan output y before the gate (D); the fp32 chunk-end states (above). The gated output and out_proj's
    input are recomputed by the backward kernel.
    Mamba-2, `mamba_split_conv1d_scan_combined` (ops/triton/ssd_combined.py, MambaSplitConv1dScanCombinedFn):
    zxbcdt, the in_proj output; out_x, the scan output before the gated RMSNorm (D); the norm's fp32 rstd
    per group (G); the conv output, the chunk states and the normed out_proj input are recomputed."""
    t = b * seq
    if s.version == 1:
        chunks = -(-seq // SCAN_CHUNK_TOKENS)
        return a * t * (_in_width(s) + s.dt_rank + 2 * s.state + 2 * s.state + s.inner) + \
            4 * b * s.inner * chunks * 2 * s.state
    return a * t * (_in_width(s) + s.inner) + 4 * t * s.groups


def _naive(s: SSMSpec, b: int, seq: int, a: int) -> int:
    """The PyTorch reference path (transformers' MambaMixer / Mamba2Mixer without mamba_ssm), counted from the
    tensors autograd keeps; checked against a saved-tensor probe of transformers 5.24 on CPU in bf16
    (tests/workload/test_ssm_training_torch.py).

    Mamba-1 (`mamba_selective_scan`'s recurrent loop): the in_proj output (x and z, 2D); seven D-wide tensors
    in the activation dtype (the conv output, its SiLU, the x_proj input and out_proj input copies, the scan
    output, SiLU(z) and the skip term); the x_proj output (r + 2N); in fp32 Δ and the upcast x (2D) and B
    (N); the discretised exp(Δ·A) and Δ·B (2 × D·N, fp32), and per step the fp32 state the next step
    multiplies (D·N) and its cast for the C product (D·N).
    Mamba-2 (chunked SSD in PyTorch, chunk length c): the in_proj output, the conv output (conv channels),
    dt and its softplus (2H) and out_proj's input (D); in fp32 nine D-wide tensors (x upcast and scaled
    by Δ, the intra- and inter-chunk outputs and their sum, the gated RMSNorm's input, gate and product),
    five (heads × state) tensors (B and C repeated to the heads, B times the decay and the two per-chunk
    products), four (heads × c) per token (the segment-sum decay L, the scores C·Bᵀ, their masked product
    and its broadcast), and the chunk states with the initial one ((chunks + 1) × D × N). This is the
    dominant part only: the probe keeps 9-12% more (small per-head and per-chunk tensors, not attributed)."""
    t = b * seq
    if s.version == 1:
        return a * t * (_in_width(s) + 7 * s.inner + s.dt_rank + 2 * s.state) + 4 * t * (2 * s.inner + s.state) + \
            (4 + 4 + 4 + a) * t * s.inner * s.state
    chunks = -(-seq // s.chunk)
    return a * t * (_in_width(s) + s.conv_channels + 2 * s.heads + s.inner) + \
        4 * t * (9 * s.inner + 5 * s.heads * s.state + 4 * s.heads * s.chunk) + \
        4 * b * (chunks + 1) * s.inner * s.state


def ssm_layer_activation_bytes(arch: ModelArch, layer: LayerSpec, micro_batch: int, seq: int, *,
                               recompute: str = "none", scan: str = "fused", act_bytes: int = 2) -> int:
    """Bytes one state-space layer keeps for its backward pass.

    Recomputation as the transformer count has it: "full" keeps only the layer's input; "selective"
    (Megatron's: the attention core) has nothing to recompute in a layer without attention, so it keeps
    what "none" keeps; "selective-op" keeps the input and the output of the products outside the fused
    scan function (in_proj; on the naive Mamba-1 path also dt_proj, the 3rd product in call order),
    everything else rerun."""
    s, b, h, a = layer.ssm, micro_batch, arch.hidden, act_bytes
    if s is None:
        raise ValueError("ssm_layer_activation_bytes: the layer has no state-space mixer")
    t = b * seq
    if recompute in ("full", "offload"):
        return a * t * h
    if recompute == "selective-op":
        kept = a * t * (h + _in_width(s))
        return kept + (a * t * s.inner if scan == "naive" and s.version == 1 else 0)
    core = _fused(s, b, seq, a) if scan == "fused" else _naive(s, b, seq, a)
    return a * t * h * (layer.norms + 1) + core
