"""The ledger of what runs once per request ahead of the decoder (`ModelArch.tower`), priced in prefill:

- an encoder-decoder's encoder (T5 over the prompt's tokens, Whisper over its 1,500 frames after a conv
  stem of two 3-tap Conv1d over 3,000 mel frames, the second of stride 2), then the K/V projections of every
  decoder layer's cross-attention over the encoder output, written to the cross-attention cache;
- a vision-language model's vision tower per image: the patch-embedding conv, the ViT layers over the image's
  patches (bidirectional attention within one image), and the projector that turns the features into
  tokens of the language model (LLaVA's two-layer MLP; Qwen2-VL's merger of 2 × 2 patches).

FLOPs follow `sizeup.ops` (an FMA counts 2; a matrix product of m × k by k × n is 2·m·k·n), the bytes those
of fused kernels (weights once per op in their stored format, attention scores never written), as
`transformer_ops.py` does for the decoder. Scopes start "encoder." or "vision_tower."; the layer ops are
one record each with `count` = layers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sizeup.errors import ConfigError
from sizeup.formats import LINEAR_ROLES, WeightFormat, get_format, tensor_bytes
from sizeup.ingest.arch import ModelArch, TowerSpec, WeightTensor
from sizeup.ingest.transformer_ops import KV_BYTES_PER_ELEMENT
from sizeup.ledger import Ledger, OpKind, OpRecord, Phase
from sizeup.ops.attention import SOFTMAX_FLOPS_PER_ELEMENT
from sizeup.ops.elementwise import FLOPS_PER_ELEMENT

__all__ = ["TowerInput", "tower_ledger", "tower_positions", "image_grid", "tower_label", "smart_resize", "QWEN2_VL_MIN_PIXELS",
           "QWEN2_VL_MAX_PIXELS"]

_ACT_FLOPS = {name: per for per, names in FLOPS_PER_ELEMENT.items() for name in names}
QWEN2_VL_MIN_PIXELS = 56 * 56
QWEN2_VL_MAX_PIXELS = 28 * 28 * 1280
"""Qwen2VLImageProcessor's default `min_pixels` / `max_pixels` (transformers'
image_processing_qwen2_vl.py): an image is resized to a multiple of patch × merge within them."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TowerInput:
    """What one prefill feeds the tower: `batch` sequences of `prompt` tokens, each with `images` images of
    `image_hw` (height, width) pixels (None: the model's own image size, or 448 × 448 for Qwen2-VL)."""

    batch: int
    prompt: int
    images: int = 0
    image_hw: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if self.batch < 1 or self.prompt < 1 or self.images < 0:
            raise ConfigError(f"tower input batch={self.batch}, prompt={self.prompt}, images={self.images}: expected "
                              f"batch and prompt >= 1, images >= 0")
        if self.image_hw is not None and min(self.image_hw) < 1:
            raise ConfigError(f"--image-size {self.image_hw[0]}x{self.image_hw[1]}: expected positive pixel sizes")


DEFAULT_IMAGE_SIDE = 448
"""The image side a Qwen2-VL estimate takes when the scenario gives none (256 tokens), stated in the result."""


def tower_label(tower: TowerSpec) -> str:
    return "encoder" if tower.kind == "encoder" else "vision tower"



def smart_resize(h: int, w: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """transformers' Qwen2-VL smart_resize (image_processing_qwen2_vl.py): each side rounded to a multiple
    of `factor`, the area kept within [min_pixels, max_pixels] at the image's aspect ratio."""
    hb, wb = max(factor, round(h / factor) * factor), max(factor, round(w / factor) * factor)
    if hb * wb > max_pixels:
        beta = math.sqrt(h * w / max_pixels)
        hb, wb = max(factor, math.floor(h / beta / factor) * factor), max(factor, math.floor(w / beta / factor) * factor)
    elif hb * wb < min_pixels:
        beta = math.sqrt(min_pixels / (h * w))
        hb, wb = math.ceil(h * beta / factor) * factor, math.ceil(w * beta / factor) * factor
    return hb, wb

def image_grid(tower: TowerSpec, image_hw: tuple[int, int] | None) -> tuple[int, int, tuple[int, int]]:
    """(patches, language-model tokens, resized (height, width)) of one image. CLIP resizes every image to its
    `image_size`; Qwen2-VL rounds each side to a multiple of patch × merge within its pixel bounds (the
    processor's smart_resize)."""
    if tower.variant == "pixtral":
        return _pixtral_grid(tower, image_hw)
    if tower.image_size:
        side = tower.image_size
        patches = (side // tower.patch) ** 2
        return patches + (1 if tower.class_token else 0), tower.feature_tokens, (side, side)
    h, w = image_hw or (DEFAULT_IMAGE_SIDE, DEFAULT_IMAGE_SIDE)
    f = tower.patch * tower.merge
    hb, wb = smart_resize(h, w, f, QWEN2_VL_MIN_PIXELS, QWEN2_VL_MAX_PIXELS)
    patches = (hb // tower.patch) * (wb // tower.patch)
    return patches, patches // (tower.merge * tower.merge), (hb, wb)


def _pixtral_grid(tower: TowerSpec, image_hw: tuple[int, int] | None) -> tuple[int, int, tuple[int, int]]:
    """PixtralImageProcessor with Mistral 3's processor: an image larger than the longest edge is scaled down
    (floored), then each side rounded up to a multiple of patch × merge; the projector gives one token per
    merge² patches, and the prompt holds a row break after each row of them ([IMG_BREAK], the last [IMG_END])."""
    h, w = image_hw or (DEFAULT_IMAGE_SIDE, DEFAULT_IMAGE_SIDE)
    ratio = max(h, w) / tower.max_image_side
    if ratio > 1:
        h, w = max(1, math.floor(h / ratio)), max(1, math.floor(w / ratio))
    f = tower.patch * tower.merge
    rows, cols = (h - 1) // f + 1, (w - 1) // f + 1
    return (rows * f // tower.patch) * (cols * f // tower.patch), rows * (cols + 1), (rows * f, cols * f)


def tower_positions(tower: TowerSpec, inp: TowerInput) -> tuple[int, int]:
    """(sequences through the tower, positions each): the batch at the prompt's length (T5) or the fixed
    encoder length (Whisper); every image of every sequence at its patches (a vision tower)."""
    if tower.kind == "encoder":
        return inp.batch, tower.positions or inp.prompt
    return inp.batch * inp.images, image_grid(tower, inp.image_hw)[0]


class _Tower:
    def __init__(self, arch: ModelArch, fmt: WeightFormat, kv_bytes: float, act_dtype: str, tp: int) -> None:
        self.arch, self.t, self.fmt, self.kv_bytes, self.act_dtype = arch, arch.tower, fmt, kv_bytes, act_dtype
        self.a = 4 if act_dtype == "fp32" else 2
        self.prefix = "encoder" if self.t.kind == "encoder" else "vision_tower"
        self.ledger = Ledger(name=f"{arch.name} ({tower_label(self.t)})")
        a, m = self.t.layer.attention, self.t.layer.mlp
        self.tp = tp if not (a.heads % tp or m.intermediate % tp) else 1
        if self.tp != tp:
            self.ledger.assumptions.append(f"{tower_label(self.t)}: tensor parallel {tp} does not divide its "
                                           f"{a.heads} heads / {m.intermediate:,} MLP width: run whole on each GPU")

    def add(self, op: str, kind: OpKind, scope: str, flops: float, read: float, written: float, matmul: float = 0,
            count: int = 1, dtype: str | None = None, notes: tuple[str, ...] = ()) -> None:
        self.ledger.add(OpRecord(op=op, kind=kind, scope=f"{self.prefix}.{scope}" if scope else self.prefix,
                                 phase=Phase.FORWARD, flops=int(flops), matmul_flops=int(matmul), bytes_read=int(read),
                                 bytes_written=int(written), dtype=dtype or self.act_dtype, count=count, notes=notes))

    def weight_bytes(self, shape: tuple[int, ...], role: str) -> int:
        return tensor_bytes(WeightTensor(f"{self.prefix}.weight", shape, role), self.arch, self.fmt)

    def linear(self, scope: str, tokens: int, n_in: int, n_out: int, bias: bool, role: str, shard: str = "column",
               count: int = 1) -> None:
        tp = self.tp if shard != "none" else 1
        n_in_l = n_in // tp if shard == "row" else n_in
        n_out_l = n_out // tp if shard == "column" else n_out
        product = 2 * tokens * n_in_l * n_out_l
        quantized = role in LINEAR_ROLES and self.fmt.family != "plain"  # an encoder's and the cross K/V linears
        read = self.weight_bytes((n_out, n_in), role) // tp + (n_out_l * 2 if bias else 0) + tokens * n_in_l * self.a
        self.add("linear", OpKind.MATMUL, scope, product + (tokens * n_out_l if bias else 0), read,
                 tokens * n_out_l * self.a, matmul=product, count=count,
                 dtype=self.fmt.compute_dtype if quantized else None)

    def norm(self, scope: str, tokens: int, width: int, count: int = 1, kind: str | None = None) -> None:
        rms = (kind or self.t.norm) == "rms"
        self.add("rms_norm" if rms else "layer_norm", OpKind.NORM, scope, (4 if rms else 8) * tokens * width,
                 tokens * width * self.a + width * 2 * (1 if rms else 2), tokens * width * self.a, count=count)

    def elementwise(self, op: str, scope: str, elements: int, per: int, inputs: int = 1, count: int = 1) -> None:
        self.add(op, OpKind.ELEMENTWISE, scope, per * elements, inputs * elements * self.a, elements * self.a,
                 count=count)

    def all_reduce(self, scope: str, tokens: int, count: int) -> None:
        if self.tp > 1:
            size = tokens * self.t.hidden * self.a
            self.add("all_reduce", OpKind.COMM, scope, 0, size, size, count=count)

    # ---- blocks ----------------------------------------------------------------------------
    def stem(self, seqs: int, length: int) -> None:
        t, h, a = self.t, self.t.hidden, self.a
        tokens = seqs * length
        if t.stem == "tokens":
            row = tensor_bytes(WeightTensor("embed_tokens.weight", (self.arch.vocab, h), "embedding"), self.arch,
                               self.fmt) // self.arch.vocab
            self.add("embedding", OpKind.EMBED, "embed_tokens", 0, tokens * (row + 8), tokens * h * a)
        elif t.stem == "audio_conv":  # conv1 over 2·length mel frames, conv2 of stride 2 down to `length`
            frames = 2 * length
            for name, n_in, out_frames in (("conv1", t.channels, frames), ("conv2", h, length)):
                product = 2 * seqs * out_frames * n_in * 3 * h
                self.add("convolution", OpKind.CONV, name, product + seqs * out_frames * h,
                         self.weight_bytes((h, n_in, 3), "conv") + 2 * h + seqs * frames * n_in * a,
                         seqs * out_frames * h * a, matmul=product)
                self.elementwise("activation", f"{name}.act", seqs * out_frames * h, _ACT_FLOPS.get("gelu_erf", 5))
            self.elementwise("add", "embed_positions", tokens, 1, inputs=2)
        else:  # a patch-strided conv: C · temporal · patch² inputs per patch
            patches = length - (1 if t.class_token else 0)
            per_patch = t.channels * t.temporal * t.patch * t.patch
            product = 2 * seqs * patches * per_patch * h
            bias = t.variant == "siglip"  # SigLIP's patch conv has a bias; CLIP's, Qwen2-VL's and Pixtral's none
            self.add("convolution", OpKind.CONV, "embeddings.patch_embedding", product + (seqs * patches * h if bias
                     else 0), self.weight_bytes((h, per_patch), "vision") + (2 * h if bias else 0)
                     + seqs * patches * per_patch * a, seqs * patches * h * a, matmul=product)
            if t.variant == "siglip":  # learned positions, no class token, no LayerNorm before the layers
                self.elementwise("add", "embeddings", tokens * h, 1, inputs=2)
            elif t.variant == "pixtral":  # RMSNorm ln_pre (its 2D RoPE is applied in each layer)
                self.norm("ln_pre", tokens, h, kind="rms")
            if t.class_token:  # CLIP: class token, learned positions, a LayerNorm before the layers
                self.elementwise("add", "embeddings", tokens * h, 1, inputs=2)
                self.norm("pre_layrnorm", tokens, h)

    def layers(self, seqs: int, length: int) -> None:
        t, h, n = self.t, self.t.hidden, self.t.layers
        a, m = t.layer.attention, t.layer.mlp
        tokens, heads, p = seqs * length, a.heads // self.tp, "layers.*"
        width = a.heads * a.head_dim
        self.norm(f"{p}.norm0", tokens, h, count=n)
        for proj in ("q_proj", "k_proj", "v_proj"):
            bias = a.qkv_bias and (t.k_bias or proj != "k_proj")
            self.linear(f"{p}.attn.{proj}", tokens, h, width, bias, t.kind, count=n)
        if t.rotary:
            rotated = tokens * 2 * heads * a.head_dim
            self.add("rotary_embedding", OpKind.ELEMENTWISE, f"{p}.attn", 7 * rotated // 2, 2 * rotated * self.a,
                     rotated * self.a, count=n)
        pairs = seqs * length * length  # bidirectional: every position sees every other
        product = 2 * pairs * heads * 2 * a.head_dim
        bias = pairs * heads if t.relative_bias else 0
        notes = ("bidirectional attention over the whole input",) + (
            ("relative-position bias added to each score",) if t.relative_bias else ())
        self.add("attention", OpKind.ATTENTION, f"{p}.attn", product + SOFTMAX_FLOPS_PER_ELEMENT * pairs * heads + bias,
                 3 * tokens * heads * a.head_dim * self.a, tokens * heads * a.head_dim * self.a, matmul=product,
                 count=n, notes=notes)
        self.linear(f"{p}.attn.o_proj", tokens, width, h, a.o_bias, t.kind, shard="row", count=n)
        self.all_reduce(f"{p}.attn", tokens, n)
        self.elementwise("add", p, tokens * h, 1, inputs=2, count=n)
        self.norm(f"{p}.norm1", tokens, h, count=n)
        act = 9 if m.act == "gelu_tanh" else _ACT_FLOPS.get(m.act, 5)
        local = m.intermediate // self.tp
        if m.gated:
            self.linear(f"{p}.mlp.gate_proj", tokens, h, m.intermediate, m.bias, t.kind, count=n)
        self.linear(f"{p}.mlp.up_proj", tokens, h, m.intermediate, m.bias, t.kind, count=n)
        self.elementwise("act_mul" if m.gated else "activation", f"{p}.mlp.act_fn", tokens * local,
                         act + (1 if m.gated else 0), inputs=2 if m.gated else 1, count=n)
        self.linear(f"{p}.mlp.down_proj", tokens, m.intermediate, h, m.bias, t.kind, shard="row", count=n)
        self.all_reduce(f"{p}.mlp", tokens, n)
        self.elementwise("add", p, tokens * h, 1, inputs=2, count=n)

    def head(self, seqs: int, length: int) -> None:
        t, h = self.t, self.t.hidden
        if t.kind == "encoder":
            self.norm("norm", seqs * length, h)
            self.cross_kv(seqs, length)
            return
        if t.class_token:  # CLIP's post_layernorm runs on the class token only
            self.norm("post_layernorm", seqs, h)
        if t.variant == "siglip":
            self.gemma3_projector(seqs, length)
            return
        if t.variant == "pixtral":
            self.mistral3_projector(seqs, length)
            return
        if not t.projector:
            return
        tokens = seqs * (t.feature_tokens or length)
        if t.projector_norm:  # Qwen2-VL's merger: a LayerNorm per patch, then merge² patches folded into one
            self.norm("merger.ln_q", seqs * length, h, kind="layer")
            tokens = seqs * length // (t.merge * t.merge)
        widths = t.projector
        for k, (n_in, n_out) in enumerate(zip(widths, widths[1:])):
            if k:
                self.elementwise("activation", f"projector.act{k}", tokens * n_in, _ACT_FLOPS.get("gelu_erf", 5))
            self.linear(f"projector.linear_{k + 1}", tokens, n_in, n_out, True, "projector", shard="none")

    def gemma3_projector(self, seqs: int, length: int) -> None:
        """SigLIP's post_layernorm on every patch, then Gemma 3's projector: an average pool of merge × merge
        patches (one add per input element) to `feature_tokens`, a Gemma RMSNorm and a bias-free matrix."""
        t, h, a = self.t, self.t.hidden, self.a
        self.norm("post_layernorm", seqs * length, h, kind="layer")
        pooled = seqs * t.feature_tokens
        self.add("avg_pool", OpKind.ELEMENTWISE, "projector.avg_pool", seqs * length * h, seqs * length * h * a,
                 pooled * h * a)
        self.norm("projector.mm_soft_emb_norm", pooled, h, kind="rms")
        self.linear("projector.mm_input_projection", pooled, h, t.projector[-1], False, "projector", shard="none")

    def mistral3_projector(self, seqs: int, length: int) -> None:
        """Mistral 3's projector: an RMSNorm per patch, the patch merger (merge² patches concatenated, one
        bias-free linear back to the vision width), then linear_1, GELU, linear_2 to the text width."""
        t, h = self.t, self.t.hidden
        self.norm("projector.norm", seqs * length, h, kind="rms")
        tokens = seqs * length // (t.merge * t.merge)
        self.linear("projector.patch_merger", tokens, h * t.merge * t.merge, h, False, "projector", shard="none")
        n_in, mid, out = t.projector
        self.linear("projector.linear_1", tokens, n_in, mid, t.projector_bias, "projector", shard="none")
        self.elementwise("activation", "projector.act", tokens * mid, _ACT_FLOPS.get("gelu_erf", 5))
        self.linear("projector.linear_2", tokens, mid, out, t.projector_bias, "projector", shard="none")

    def cross_kv(self, seqs: int, length: int) -> None:
        """Every decoder layer's cross-attention K and V over the encoder output, once per sequence, into the
        cross-attention cache (Whisper's k_proj has no bias: the v bias is counted, the k one not)."""
        arch, tokens = self.arch, seqs * length
        for first, count in _groups(arch):
            a = arch.layers[first].attention
            width = a.heads * a.head_dim
            self.linear("cross_attn.k_proj", tokens, arch.hidden, width, False, "attention", count=count)
            self.linear("cross_attn.v_proj", tokens, arch.hidden, width, a.qkv_bias, "attention", count=count)
            local = 2 * tokens * width // self.tp
            self.add("kv_cache_write", OpKind.COPY, "cross_attn", 0, local * self.a, local * self.kv_bytes, count=count,
                     notes=("cross-attention K/V written once per sequence",))


def _groups(arch: ModelArch) -> list[tuple[int, int]]:
    """(first decoder layer, repeats) per distinct attention spec."""
    seen: dict = {}
    for i, layer in enumerate(arch.layers):
        seen.setdefault(layer.attention, [i, 0])[1] += 1
    return [tuple(v) for v in seen.values()]


def tower_ledger(arch: ModelArch, inp: TowerInput, *, weights: WeightFormat | str = "bf16", kv_dtype: str = "fp16",
                 act_dtype: str = "bf16", tp: int = 1) -> Ledger:
    """The ops of `arch.tower` for one prefill of `inp` (per GPU when `tp` > 1); an empty ledger when the model
    has no tower or the prompt carries no image."""
    fmt = get_format(weights) if isinstance(weights, str) else weights
    if kv_dtype not in KV_BYTES_PER_ELEMENT:
        raise ConfigError(f"unknown KV cache dtype {kv_dtype!r}: expected one of {', '.join(KV_BYTES_PER_ELEMENT)}")
    if arch.tower is None:
        return Ledger(name=arch.name)
    b = _Tower(arch, fmt, KV_BYTES_PER_ELEMENT[kv_dtype], act_dtype, tp)
    seqs, length = tower_positions(arch.tower, inp)
    if seqs == 0:
        return b.ledger
    b.stem(seqs, length)
    b.layers(seqs, length)
    b.head(seqs, length)
    return b.ledger
