"""What T5 and Whisper share: an encoder stack whose weights sizeup counts (in `extra_tensors`) and runs
once per input, and decoder layers that add a cross-attention block (`layers.{i}.cross.*`) over the
encoder's `cross_source` positions, whose K/V are held per sequence beside the growing self-attention cache."""

from __future__ import annotations

from sizeup.ingest.arch import LayerSpec, WeightTensor

__all__ = ["block_tensors", "cross_tensors", "ENCODER_NOTE"]

ENCODER_NOTE = ("encoder-decoder: the encoder runs once per input, priced in prefill (TTFT) with the cross-attention "
                "K/V projections over its output; the decoder's self-attention cache grows with the output, its "
                "cross-attention K/V over {source} are held per sequence")


def _linear(name: str, n_in: int, n_out: int, bias: bool, role: str, layer: int | None) -> list[WeightTensor]:
    out = [WeightTensor(f"{name}.weight", (n_out, n_in), role, layer)]
    return out + ([WeightTensor(f"{name}.bias", (n_out,), "bias", layer)] if bias else [])


def _norm(name: str, h: int, bias: bool, layer: int | None) -> list[WeightTensor]:
    return [WeightTensor(f"{name}.weight", (h,), "norm", layer)] + \
        ([WeightTensor(f"{name}.bias", (h,), "norm", layer)] if bias else [])


def block_tensors(prefix: str, spec: LayerSpec, h: int, norm_bias: bool, k_bias: bool = True) -> list[WeightTensor]:
    """One encoder layer: two norms, self-attention (q/k/v/o, biases as `spec` says; Whisper's k_proj has
    none: `k_bias` False) and the MLP."""
    a, m = spec.attention, spec.mlp
    width = a.heads * a.head_dim
    out = _norm(f"{prefix}.norm0", h, norm_bias, None) + _norm(f"{prefix}.norm1", h, norm_bias, None)
    out += _linear(f"{prefix}.attn.q_proj", h, width, a.qkv_bias, "encoder", None)
    out += _linear(f"{prefix}.attn.k_proj", h, width, a.qkv_bias and k_bias, "encoder", None)
    out += _linear(f"{prefix}.attn.v_proj", h, width, a.qkv_bias, "encoder", None)
    out += _linear(f"{prefix}.attn.o_proj", width, h, a.o_bias, "encoder", None)
    if m.gated:
        out += _linear(f"{prefix}.mlp.gate_proj", h, m.intermediate, m.bias, "encoder", None)
    out += _linear(f"{prefix}.mlp.up_proj", h, m.intermediate, m.bias, "encoder", None)
    out += _linear(f"{prefix}.mlp.down_proj", m.intermediate, h, m.bias, "encoder", None)
    return out


def cross_tensors(i: int, spec: LayerSpec, h: int, norm_bias: bool, k_bias: bool = True) -> list[WeightTensor]:
    """Decoder layer `i`'s cross-attention: its norm and q/k/v/o (role "attention")."""
    a, p = spec.attention, f"layers.{i}.cross"
    width = a.heads * a.head_dim
    out = _norm(f"{p}.norm", h, norm_bias, i)
    out += _linear(f"{p}.q_proj", h, width, a.qkv_bias, "attention", i)
    out += _linear(f"{p}.k_proj", h, width, a.qkv_bias and k_bias, "attention", i)
    out += _linear(f"{p}.v_proj", h, width, a.qkv_bias, "attention", i)
    return out + _linear(f"{p}.o_proj", width, h, a.o_bias, "attention", i)
