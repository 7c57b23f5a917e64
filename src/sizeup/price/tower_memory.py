"""Activation memory of the tower that runs ahead of the decoder (`ModelArch.tower`): an encoder-decoder's
encoder over its input, a vision-language model's vision tower over each image.

The tower's pass and the decoder's prefill run one after the other, so their temporaries are not live
together: the peak is the larger of the tower's own pass and the decoder's prefill plus what the tower
leaves behind for it — the encoder output (transformers' `generate` keeps `encoder_outputs` for the whole
generation; the cross-attention K/V are in the cache) or the image embeddings the prompt takes in.

The tower's pass counts, per GPU (`act_bytes` per element, heads and MLP width split by tensor parallelism
where they divide, as the tower's ledger splits them):
- its residual stream and normed input (2·T·h over its T positions), plus the widest stage of a layer: the
  q/k/v projections (3·T·heads·head_dim) with, on the math attention path, one layer's s² scores and softmax
  output (2·inputs·heads·L²), or the MLP (gate and up outputs and the activation, 3·T·I; 2·T·I ungated);
- T5's relative-position bias, formed once per input over every head and kept through the encoder's layers
  (inputs·heads·L²); its scores are always formed explicitly (a bias added to each score rules out a fused
  kernel: transformers' T5Attention, llama.cpp's kq_b);
- the stem (Whisper's two convolutions over 2·L mel frames; the image's pixels and the patch embedding) and
  the projector (features in, its hidden and GELU outputs), where they are wider than a layer;
- LLaVA under transformers: the vision tower is called with output_hidden_states=True (to take
  `vision_feature_layer`), so every layer's output is kept until the tower returns (layers·T·h more).
"""

from __future__ import annotations

from dataclasses import dataclass

from sizeup.ingest.arch import ModelArch
from sizeup.ingest.tower_ops import TowerInput, image_grid, tower_label, tower_positions

__all__ = ["TowerActivations", "tower_activations"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TowerActivations:
    peak_bytes: int
    """Live during the tower's own pass (its largest stage)."""
    kept_bytes: int
    """Left for the decoder's prefill: the encoder output or the image embeddings."""
    hidden_states_bytes: int = 0
    """Of `peak_bytes`: every layer's output kept (LLaVA under transformers)."""
    note: str = ""


def tower_activations(arch: ModelArch, inp: TowerInput, *, act_bytes: int, tp: int, fused: bool,
                      keep_hidden_states: bool, path: str = "") -> TowerActivations:
    """The tower's activations for one prefill of `inp`; `fused`: the engine's attention kernel forms no s²
    tensors (ignored for a relative-position bias); `keep_hidden_states`: the engine keeps every layer's output
    (transformers' LLaVA); `path` names the attention kernel in the note."""
    t = arch.tower
    seqs, length = tower_positions(t, inp) if t is not None else (0, 0)
    if seqs == 0:
        return TowerActivations(peak_bytes=0, kept_bytes=0)
    a, m, h = t.layer.attention, t.layer.mlp, t.hidden
    split = tp if not (a.heads % tp or m.intermediate % tp) else 1
    tokens, heads = seqs * length, a.heads // split
    qkv = 3 * tokens * heads * a.head_dim
    math_path = t.relative_bias or not fused
    scores = 2 * seqs * heads * length * length if math_path else 0
    bias = seqs * heads * length * length if t.relative_bias else 0
    mlp = (3 if m.gated else 2) * tokens * (m.intermediate // split)
    layer = 2 * tokens * h + max(qkv + scores, mlp)
    stages = [layer]
    if t.stem == "audio_conv":  # mel input, conv output and its GELU over 2·L frames
        frames = seqs * 2 * length
        stages.append(frames * t.channels + 2 * frames * h)
    elif t.stem == "patch_conv":
        patches = seqs * (length - (1 if t.class_token else 0))
        stages.append(patches * t.channels * t.temporal * t.patch * t.patch + tokens * h)
    if t.kind == "encoder":
        kept = tokens * h
    else:
        per_image = image_grid(t, inp.image_hw)[1]
        width = t.projector[-1] if t.projector else arch.hidden
        kept = seqs * per_image * width
        if len(t.projector) > 1:  # features in, the first linear's output and its GELU
            stages.append(seqs * per_image * (t.projector[0] + 2 * t.projector[1]))
    hidden_states = t.layers * tokens * h if keep_hidden_states else 0
    peak = (max(stages) + bias + hidden_states) * act_bytes
    label = tower_label(t)
    attention = ("s² scores, softmax output and the relative-position bias" if t.relative_bias else
                 f"s² scores and softmax output ({path or 'math path'})") if math_path else \
        f"no s² tensors ({path or 'fused attention'})"
    note = (f"{label} activations: its pass peaks at {peak / 2**20:,.1f} MiB ({seqs:,} input(s) x {length:,} "
            f"positions; attention: {attention}"
            + ("; every layer's output kept (output_hidden_states)" if hidden_states else "")
            + f"), {kept * act_bytes / 2**20:,.1f} MiB of "
            + ("encoder output" if t.kind == "encoder" else "image embeddings")
            + " kept for the decoder's prefill; peak = max(tower pass, decoder prefill + what it keeps)")
    return TowerActivations(peak_bytes=peak, kept_bytes=kept * act_bytes,
                            hidden_states_bytes=hidden_states * act_bytes, note=note)
