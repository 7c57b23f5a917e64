"""Activation memory of the tower that runs ahead of the decoder (`ModelArch.tower`): an encoder-decoder's
encoder over its input, a vision-language model's vision tower over each image.

The tower's pass and the decoder's prefill run one after the other, so their temporaries are not live
together: the peak is the larger of the tower's own pass and the decoder's prefill plus what the tower
leaves behind for it — the encoder output (transformers' `generate` keeps `encoder_outputs` for the whole
generation; the cross-attention K/V are in the cache) or the image embeddings the prompt takes in.

The tower's pass counts, per GPU (`act_bytes` per element, heads and MLP width split by tensor parallelism
where they divide, as the tower's ledger splits them):
- the widest stage of a layer, as measured under transformers (tests/price/test_tower_memory_torch.py): the
  attention, with three T·h tensors over its T positions (the stack's input its caller holds through every
  layer, the layer's input the loop holds, which is the residual, and the normed input), the q/k/v
  projections (3·T·heads·head_dim) and, on the math attention path, one layer's s² scores and their scaled
  or softmax successor (2·inputs·heads·L²; CLIP's eager softmax runs in fp32: the scores, their fp32 copy and
  the fp32 output, act_bytes + 8 bytes a score); or the MLP, with four T·h (the residual sum is a new tensor) and
  the gate and up outputs and their product (3·T·I), ungated fc1's output and the activation (2·T·I), or
  3·T·I for quick_gelu, x·sigmoid(1.702·x), whose scaled input and sigmoid are both live;
- T5's relative-position bias (transformers 5: one heads·L² tensor computed by the first layer and shared by
  all), and per layer the additive mask SDPA takes it in, the bias combined with the padding mask
  (inputs·heads·L²; an upper bound where no padding mask is passed); a float mask rules out the flash
  kernel, SDPA's memory-efficient kernel takes it;
- the stem (Whisper's two convolutions over 2·L mel frames; the image's pixels and the patch embedding) and
  the projector (features in, its hidden and GELU outputs), where they are wider than a layer;
- the outputs of the layers the projector reads, held until the tower returns (transformers 5's LLaVA
  captures only `vision_feature_layer`'s hidden states; layer -2's output is the last layer's input, already
  counted: `kept_layers` × T·h for the others).
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
    """Of `peak_bytes`: the selected layers' outputs held for the projector (LLaVA under transformers)."""
    note: str = ""


def tower_activations(arch: ModelArch, inp: TowerInput, *, act_bytes: int, tp: int, fused: bool,
                      kept_layers: int = 0, path: str = "", grid: tuple[int, int] | None = None) -> TowerActivations:
    """The tower's activations for one prefill of `inp`; `fused`: the engine's attention kernel forms no s²
    scores; `kept_layers`: layer outputs the engine holds beside the residual stream until the tower returns
    (transformers' LLaVA: its feature layers); `path` names the attention kernel in the note; `grid`: (positions,
    tokens) of each image where another processor than the model library's resizes it (an engine's start-up
    profile, at the checkpoint's pixel bounds), else `image_grid`'s."""
    t = arch.tower
    seqs, length = tower_positions(t, inp) if t is not None else (0, 0)
    if grid is not None and t is not None and t.kind == "vision":
        length = grid[0]
    if seqs == 0:
        return TowerActivations(peak_bytes=0, kept_bytes=0)
    a, m, h = t.layer.attention, t.layer.mlp, t.hidden
    split = tp if not (a.heads % tp or m.intermediate % tp) else 1
    tokens, heads = seqs * length, a.heads // split
    qkv = 3 * tokens * heads * a.head_dim
    square = heads * length * length
    # per score on the math path: two live in the compute dtype, or CLIP's scores beside the fp32 copy its
    # softmax takes and the fp32 softmax output
    per_score = 0 if fused else (act_bytes + 8 if t.class_token else 2 * act_bytes)
    bias = (1 + seqs) * square if t.relative_bias else 0  # the shared bias, one layer's mask made of it
    mlp = (3 if m.gated or m.act == "quick_gelu" else 2) * tokens * (m.intermediate // split)
    attn_bytes = (3 * tokens * h + qkv) * act_bytes + seqs * square * per_score
    stages = [4 * tokens * h + mlp]
    if t.stem == "audio_conv":  # mel input, conv output and its GELU over 2·L frames
        frames = seqs * 2 * length
        stages.append(frames * t.channels + 2 * frames * h)
    elif t.stem == "patch_conv":
        patches = seqs * (length - (1 if t.class_token else 0))
        stages.append(patches * t.channels * t.temporal * t.patch * t.patch + tokens * h)
    if t.kind == "encoder":
        kept = tokens * h
    else:
        per_image = grid[1] if grid is not None else image_grid(t, inp.image_hw)[1]
        width = t.projector[-1] if t.projector else arch.hidden
        kept = seqs * per_image * width
        if len(t.projector) > 1:  # features in, the first linear's output and its GELU
            stages.append(seqs * per_image * (t.projector[0] + 2 * t.projector[1]))
    hidden_states = kept_layers * tokens * h
    peak = max(max(stages) * act_bytes, attn_bytes) + (bias + hidden_states) * act_bytes
    label = tower_label(t)
    attention = "no s² scores" if fused else "s² scores and softmax output"
    if fused and t.relative_bias and path.startswith("sdpa"):  # SDPA takes the bias as a float mask, which its flash kernel does not
        path = "SDPA's memory-efficient kernel, the bias as its float mask"
    attention += f" ({path})" if path else ""
    attention += "; the relative-position bias and its per-layer mask (s²)" if t.relative_bias else ""
    note = (f"{label} activations: its pass peaks at {peak / 2**20:,.1f} MiB ({seqs:,} input(s) x {length:,} "
            f"positions; attention: {attention}"
            + (f"; {kept_layers} feature layer output(s) held for the projector" if hidden_states else "")
            + f"), {kept * act_bytes / 2**20:,.1f} MiB of "
            + ("encoder output" if t.kind == "encoder" else "image embeddings")
            + " kept for the decoder's prefill; peak = max(tower pass, decoder prefill + what it keeps)")
    return TowerActivations(peak_bytes=peak, kept_bytes=kept * act_bytes,
                            hidden_states_bytes=hidden_states * act_bytes, note=note)
