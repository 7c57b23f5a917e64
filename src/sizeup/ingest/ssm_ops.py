"""The ops of one selective state-space mixer (Mamba / Mamba-2) in a forward step, for the transformer
ledger's builder: in_proj, the depthwise causal conv over a window of `conv` taps, the selective scan,
the gate, out_proj. The scan's cost is linear in the new tokens and reads and writes the fixed recurrent
state once per step (the conv window and the (inner × state) scan state, in the KV-cache dtype); nothing
grows with the context (Gu & Dao 2023, arXiv:2312.00752, section 3.3; Dao & Gu 2024, arXiv:2405.21060)."""

from __future__ import annotations

from typing import Any

from sizeup.errors import ConfigError
from sizeup.ingest.arch import LayerSpec
from sizeup.ledger import OpKind

__all__ = ["DELTA_FLOPS_PER_STATE", "SCAN_FLOPS_PER_STATE", "ssm_mixer"]

DELTA_FLOPS_PER_STATE = 7
"""FLOPs of the gated delta rule per token and state element (Yang et al. 2024, arXiv:2412.06464, eq. for
S_t = α_t S_{t-1} (I - β_t k_t k_tᵀ) + β_t v_t k_tᵀ, o_t = S_t q_t), per value head with a (key × value) state:
S k (2), the decay α·S (1), the rank-one update u kᵀ added in (2), the readout S q (2); the per-head vectors (β, u)
are below one per element. Counted on the recurrent form; the chunked form kernels run in prefill regroups the same
products into chunk-local matmuls (derived)."""

SCAN_FLOPS_PER_STATE = 9
"""FLOPs of the recurrence per token and state element: dA = exp(Δ·A) (2, the exp counted as one), Δ·B·x
(2), h = dA·h + Δ·B·x (2), y += C·h (2), and D·x's share (1) — the paper's O(B·L·D·N) scan, counted
element by element (derived)."""


def ssm_mixer(b: Any, i: int, layer: LayerSpec) -> None:
    """Add the mixer of layer `i` to builder `b` (transformer_ops._Builder). A Gated DeltaNet mixer splits its heads
    over tensor-parallel ranks as vLLM's does (in_proj column-parallel, the conv, the state and the norm per rank's heads,
    out_proj row-parallel and an all-reduce); a Mamba mixer under tensor parallelism is not modelled."""
    s, step, t, h = layer.ssm, b.step, b.step.tokens, b.arch.hidden
    tp = b.tp if s.version == 3 else 1
    if b.tp > 1 and s.version != 3:
        raise ConfigError(f"tensor parallel {b.tp} over a state-space model: not modelled (expected --gpus 1)")
    if tp > 1 and (s.heads % tp or s.groups % tp):
        raise ConfigError(f"tensor parallel {tp} does not divide the linear attention's {s.groups} key heads / "
                          f"{s.heads} value heads")
    p, w = f"model.layers.{i}.mixer", f"layers.{i}.mixer"
    shard = "column" if tp > 1 else "none"
    channels, inner, heads, groups = s.conv_channels // tp, s.inner // tp, s.heads // tp, s.groups // tp
    if s.version == 3:  # Gated DeltaNet: q, k, v, z, then β and the decay's Δ per value head
        b.linear(f"{p}.in_proj_qkvz", f"{w}.in_proj_qkvz.weight", t, h, s.conv_channels + s.inner, s.bias, shard=shard)
        b.linear(f"{p}.in_proj_ba", f"{w}.in_proj_ba.weight", t, h, 2 * s.heads, s.bias, shard=shard)
    else:
        n_in = 2 * s.inner if s.version == 1 else s.inner + channels + s.heads
        b.linear(f"{p}.in_proj", f"{w}.in_proj.weight", t, h, n_in, s.bias, shard="none")
    state_bytes = int(step.batch * s.state_elements * b.kv_bytes / tp)
    conv_state = int(step.batch * channels * s.conv * b.kv_bytes)
    b.add("conv1d", OpKind.CONV, f"{p}.conv1d", 2 * t * channels * s.conv + (t * channels if s.conv_bias else 0),
          t * channels * b.a + b.wbytes(f"{w}.conv1d.weight", tp > 1) + conv_state, t * channels * b.a + conv_state,
          notes=("depthwise causal conv; its window is part of the recurrent state",))
    b.elementwise("activation", f"{p}.act", t * channels, 4)
    if s.version == 1:
        b.linear(f"{p}.x_proj", f"{w}.x_proj.weight", t, s.inner, s.dt_rank + 2 * s.state, False, shard="none")
        b.linear(f"{p}.dt_proj", f"{w}.dt_proj.weight", t, s.dt_rank, s.inner, True, shard="none")
        b.elementwise("softplus", f"{p}.dt", t * s.inner, 4)
        dt_width = s.inner
    else:  # Mamba-2: Δ per head; Gated DeltaNet: β and the decay's Δ per value head
        dt_width = heads if s.version == 2 else 2 * heads
    scan_state = state_bytes - conv_state
    # the scan reads x, Δ, B and C of each new token and the stored state; it writes y and the new state
    inputs = t * (inner + dt_width + 2 * groups * s.state) * b.a
    if s.version == 3:
        b.add("gated_delta_rule", OpKind.OTHER, f"{p}.delta_rule", DELTA_FLOPS_PER_STATE * t * inner * s.state,
              inputs + scan_state, t * inner * b.a + scan_state,
              notes=("gated delta rule: linear in the new tokens; reads and writes the fixed state once per step",))
    else:
        b.add("selective_scan", OpKind.OTHER, f"{p}.scan", SCAN_FLOPS_PER_STATE * t * inner * s.state,
              inputs + scan_state, t * inner * b.a + scan_state,
              notes=("selective scan: linear in the new tokens; reads and writes the fixed state once per step",))
    if s.version == 1:
        b.elementwise("gate", f"{p}.gate", t * inner, 5, inputs=2)  # y · silu(z)
    else:
        b.add("rms_norm", OpKind.NORM, f"{p}.norm", 9 * t * inner, 2 * t * inner * b.a, t * inner * b.a,
              notes=("gated RMSNorm: y · silu(z), normed",))
    b.linear(f"{p}.out_proj", f"{w}.out_proj.weight", t, s.inner, h, s.bias, shard="row" if tp > 1 else "none")
    if tp > 1:
        b.all_reduce(p, t)
