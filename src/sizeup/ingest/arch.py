"""The architecture of a model as sizeup reads it: the exact weight tensors of a transformer (shapes and
roles), with the attention, MLP and layer specs they follow. Pure data: the readers under
`sizeup.ingest.families` build it from a config, the readers of file headers from their metadata.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache

__all__ = ["MLASpec", "AttentionSpec", "MLPSpec", "SSMSpec", "LayerSpec", "TowerSpec", "WeightTensor", "ModelArch",
           "NO_ATTENTION", "NO_MLP"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MLASpec:
    """DeepSeek multi-head latent attention: queries through an optional low-rank path, keys and
    values compressed to a shared latent of `kv_lora_rank` plus a decoupled RoPE key."""

    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    expanded_v_dim: int = 0
    """0: the engine caches the latent (and attends in it at decode). Else it runs MLA as multi-head attention: each
    token's keys and values are decompressed once and cached per head, values padded to this width (an engine
    whose attention kernel needs equal key and value widths pads them to the key's)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AttentionSpec:
    heads: int
    kv_heads: int
    head_dim: int
    """Query/key width per head (for MLA: nope + rope)."""
    v_head_dim: int
    window: int | None = None
    """Sliding-window length; None for global attention."""
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    causal: bool = True
    mla: MLASpec | None = None
    rotary_dim: int | None = None
    """Rotary width per head: None for all of `head_dim` (partial rotary: GPT-NeoX, GPT-J, Phi rotate
    fewer); positions then come from rotary embeddings unless the model learns them or uses ALiBi."""
    alibi: bool = False
    """ALiBi (MPT, BLOOM, Falcon with `alibi`): a per-head linear bias on the scores, no rotary, no weights."""
    sinks: bool = False
    """A learned sink logit per head in the softmax (gpt-oss): `heads` parameters."""
    output_gate: bool = False
    """Gated attention (Qwen3-Next `attn_output_gate`): q_proj also emits a per-channel gate (its width doubles) that
    multiplies the attention output through a sigmoid before o_proj."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MLPSpec:
    intermediate: int
    gated: bool
    act: str
    bias: bool = False
    experts: int = 0
    """Routed experts (0: a dense MLP of `intermediate`)."""
    top_k: int = 0
    shared_experts: int = 0
    shared_intermediate: int = 0
    shared_gate: bool = False
    router_bias: bool = False
    router_linear_bias: bool = False
    """The router Linear carries a bias (gpt-oss); `router_bias` is DeepSeek's score-correction bias."""

    @property
    def is_moe(self) -> bool:
        return self.experts > 0


@dataclass(frozen=True, slots=True, kw_only=True)
class SSMSpec:
    """A selective state-space mixer (Gu & Dao 2023, arXiv:2312.00752; Mamba-2: Dao & Gu 2024,
    arXiv:2405.21060): in_proj, a depthwise causal conv of `conv` taps, the selective scan, out_proj.
    It keeps a fixed recurrent state per sequence (the conv window and the scan state) in place of a KV
    cache: the state does not grow with the context."""

    version: int
    """1: Mamba (x_proj and dt_proj, a (inner, state) A matrix); 2: Mamba-2 (SSD: one A per head, B and C
    from in_proj in `groups` groups, a gated RMSNorm before out_proj); 3: Gated DeltaNet (Yang et al. 2024,
    arXiv:2412.06464; Qwen3-Next's linear attention): `groups` key heads of `state` width (queries and keys, the
    conv's B and C), `heads` value heads over `inner` = heads × value width, a (key width × value width) state per
    value head (inner × state in all), in_proj_qkvz plus in_proj_ba (β and the decay, 2 per value head), a gated
    RMSNorm of one value head's width before out_proj."""
    inner: int
    state: int
    conv: int
    dt_rank: int = 0
    """Mamba-1's time-step rank (the x_proj -> dt_proj bottleneck); 0 for Mamba-2."""
    heads: int = 0
    """Mamba-2's SSD heads (inner = heads × head_dim); 0 for Mamba-1."""
    groups: int = 1
    bias: bool = False
    """in_proj and out_proj carry biases."""
    conv_bias: bool = True
    chunk: int = 256
    """Mamba-2's SSD chunk length (`chunk_size`; transformers' default 256): what its PyTorch path
    materialises per chunk in training (chunk × chunk blocks). Unused by Mamba-1."""

    @property
    def conv_channels(self) -> int:
        """Channels of the depthwise conv (Mamba-2 convolves x, B and C together)."""
        return self.inner if self.version == 1 else self.inner + 2 * self.groups * self.state

    @property
    def state_elements(self) -> int:
        """Recurrent state of one sequence in one layer: the conv window (channels × taps, as transformers'
        and mamba_ssm's caches hold it) plus the scan state (inner × state)."""
        return self.conv_channels * self.conv + self.inner * self.state


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerSpec:
    attention: AttentionSpec
    mlp: MLPSpec
    norms: int = 2
    """hidden-sized norms in the layer (2 pre-norms; Gemma 2/3 add post-norms: 4; a parallel layer has 1
    shared norm or 2, one per branch)."""
    parallel: bool = False
    """Attention and MLP read the same input and add into one residual (GPT-J, GPT-NeoX, Falcon, Phi)."""
    ssm: SSMSpec | None = None
    """A state-space mixer in place of attention (`attention` is then NO_ATTENTION, weightless and cache-free);
    Mamba has no MLP either (NO_MLP); a hybrid's linear-attention layer (Qwen3-Next) keeps its MLP after it."""


NO_ATTENTION = AttentionSpec(heads=1, kv_heads=1, head_dim=0, v_head_dim=0)
"""The attention of a layer that has none (a state-space layer): no weights, no KV cache, no FLOPs."""
NO_MLP = MLPSpec(intermediate=0, gated=False, act="none")
"""The MLP of a layer that has none (a Mamba block is its mixer alone)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TowerSpec:
    """A stack that runs once per request ahead of the decoder, priced in prefill (`ingest/tower_ops.py`):
    an encoder-decoder's encoder over the input tokens or audio frames (`kind` "encoder"), or a
    vision-language model's vision tower over each image's patches (`kind` "vision"). Its weights are in
    the model's `extra_tensors` (roles "encoder", "vision", "projector"); this says how they run."""

    kind: str
    """"encoder" | "vision"."""
    hidden: int
    layer: LayerSpec
    """Every layer's spec (bidirectional attention, whatever `causal` says)."""
    layers: int
    norm: str
    """"rms" (T5) | "layer" (LayerNorm with bias)."""
    stem: str
    """"tokens" (an embedding lookup: T5), "audio_conv" (two 3-tap Conv1d, the second of stride 2:
    Whisper), "patch_conv" (a patch-size-strided conv over the image: CLIP, Qwen2-VL's 3D conv)."""
    positions: int = 0
    """Encoder positions per input: Whisper's `max_source_positions`, a CLIP tower's patches (+ class token)
    at its fixed image size; 0: the prompt's length (T5) or the image's own resolution (Qwen2-VL)."""
    channels: int = 0
    """Input channels of the stem: mel bins, image channels."""
    patch: int = 0
    temporal: int = 1
    """Frames one 3D patch spans (Qwen2-VL: 2; a still image is repeated to fill them)."""
    image_size: int = 0
    """Side every image is resized to (CLIP); 0: images keep their own size (Qwen2-VL)."""
    class_token: bool = False
    k_bias: bool = True
    """k_proj carries a bias when the layer's q/k/v do (Whisper's has none)."""
    relative_bias: bool = False
    """T5's relative-position bias added to every score."""
    rotary: bool = False
    """Rotary positions on q and k (Qwen2-VL's 2D RoPE)."""
    merge: int = 1
    """Patches per side the projector folds into one token (Qwen2-VL's spatial_merge_size)."""
    projector: tuple[int, ...] = ()
    """Widths of the projector MLP, input first (GELU between): CLIP features -> text width (LLaVA), the
    folded merge² patches -> text width (Qwen2-VL, after a LayerNorm). Empty: none."""
    projector_norm: bool = False
    feature_tokens: int = 0
    """Tokens per image the projector sees (LLaVA: patches, + the class token with strategy "full")."""
    variant: str = ""
    """A vision tower's own pipeline where it differs from CLIP's: "siglip" (Gemma 3: conv with bias, learned
    positions, post-LayerNorm on every patch, the projector's average pool, RMSNorm and bias-free matrix),
    "pixtral" (Mistral 3: RMSNorm ln_pre, the projector's RMSNorm, patch merger and two linears)."""
    max_image_side: int = 0
    """Pixtral: the longest side an image is scaled down to (its processor's longest_edge)."""
    projector_bias: bool = True


@dataclass(frozen=True, slots=True)
class WeightTensor:
    name: str
    shape: tuple[int, ...]
    role: str
    """embedding | position | patch | attention | mlp | expert | shared_expert | router | norm | bias |
    lm_head | pooler | classifier"""
    layer: int | None = None

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelArch:
    name: str
    model_type: str
    hidden: int
    vocab: int
    layers: tuple[LayerSpec, ...]
    norm: str = "rms"
    """rms | layer (LayerNorm with bias) | layer_nobias (LayerNorm, weight only: MPT) | layer_noaffine
    (LayerNorm without weights: OPT with `layer_norm_elementwise_affine` false)."""
    tie_embeddings: bool = False
    positions: int = 0
    """Learned absolute position embeddings (GPT-2, BERT, ViT); 0 for RoPE models."""
    type_vocab: int = 0
    encoder: bool = False
    lm_head: bool = True
    pooler: bool = False
    classifier: int = 0
    image: tuple[int, int, int] | None = None
    """(image size, patch size, channels) for vision encoders."""
    embed_scale: bool = False
    max_context: int = 0
    mtp_layers: int = 0
    dropout: float = 0.0
    """Largest dropout probability of the config (attention, residual, embedding); training stores its masks."""
    extra_tensors: tuple[WeightTensor, ...] = ()
    assumptions: tuple[str, ...] = ()
    embed_norm: bool = False
    """A norm right after the token embedding (BLOOM's word_embeddings_layernorm)."""
    final_norm: bool = True
    """The norm before the LM head (OPT's post-norm variants have none)."""
    lm_head_bias: bool = False
    embed_dim: int = 0
    """Width of the token embedding and the LM head when it differs from `hidden` (OPT's
    `word_embed_proj_dim`, with project_in / project_out matrices); 0: the hidden size."""
    reader: str = ""
    """Which path read the model: "analytic:<family>" or "transformers <version> (meta device)"."""
    cross_source: int = 0
    """Encoder-decoders (T5, Whisper): the encoder positions every decoder layer cross-attends to; its
    cross-attention K/V are computed once per sequence and held beside the self-attention cache, fixed by the
    encoder length. `layers` are the decoder's; the encoder's weights and the cross-attention projections
    (`layers.{i}.cross.{q,k,v,o}_proj`) are in `extra_tensors`. 0: no cross-attention."""
    tower: TowerSpec | None = None
    """The encoder of an encoder-decoder or the vision tower of a vision-language model: its forward runs
    once per sequence (per image) in prefill. None: nothing runs ahead of the decoder."""
    stored_format: str = ""
    """The weight format the file itself stores (a GGUF file's `general.file_type`, else its tensors' types):
    the estimate's format when none is asked for. "": a config, which says nothing of it, or a file type
    sizeup has no format for (then `stored_format_from` says which)."""
    stored_format_from: str = ""
    """Where `stored_format` was read, e.g. "GGUF general.file_type = 15 (MOSTLY_Q4_K_M)"; "" for a config."""
    _hash: int = field(default=0, init=False, repr=False, compare=False)
    """The hash, computed once: every cached pricing function is keyed on the architecture, and hashing its nested
    layer specs afresh costs ~100 calls a lookup (a third of a plan over every engine went there)."""

    def __hash__(self) -> int:
        if not self._hash:
            object.__setattr__(self, "_hash", hash(tuple(getattr(self, f.name) for f in _ARCH_FIELDS)) or 1)
        return self._hash

    def __getstate__(self) -> list:
        """Pickled without the cached hash: string hashes differ between processes."""
        return [getattr(self, f.name) for f in _ARCH_FIELDS]

    def __setstate__(self, state: list) -> None:
        for f, value in zip(_ARCH_FIELDS, state):
            object.__setattr__(self, f.name, value)
        object.__setattr__(self, "_hash", 0)

    @property
    def encoder_layers(self) -> tuple[LayerSpec, ...]:
        """Encoder-decoders: the encoder's layer specs (bidirectional attention, no rotary), from the tower, for
        what training runs and keeps over the source; their weights are in `extra_tensors`. (): no encoder."""
        t = self.tower
        if t is None or t.kind != "encoder":
            return ()
        a = t.layer.attention
        return (replace(t.layer, attention=replace(a, causal=False, rotary_dim=0 if a.rotary_dim is None else a.rotary_dim)),) * t.layers

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    @property
    def is_moe(self) -> bool:
        return _is_moe(self)

    def tensors(self) -> tuple[WeightTensor, ...]:
        """Every weight of the model with its shape and role (tied weights once)."""
        return _tensors(self)

    def _build_tensors(self) -> tuple[WeightTensor, ...]:
        h, out = self.hidden, []
        if self.image:
            size, patch, channels = self.image
            out.append(WeightTensor("embeddings.patch_embeddings.weight", (h, channels, patch, patch), "patch"))
            out.append(WeightTensor("embeddings.patch_embeddings.bias", (h,), "bias"))
            out.append(WeightTensor("embeddings.cls_token", (h,), "position"))
            out.append(WeightTensor("embeddings.position_embeddings", ((size // patch) ** 2 + 1, h), "position"))
        else:
            out.append(WeightTensor("embed_tokens.weight", (self.vocab, self.embed_dim or h), "embedding"))
        if self.embed_dim:
            out.append(WeightTensor("project_in.weight", (h, self.embed_dim), "embedding"))
            out.append(WeightTensor("project_out.weight", (self.embed_dim, h), "embedding"))
        if self.positions and not self.image:
            out.append(WeightTensor("position_embeddings.weight", (self.positions, h), "position"))
        if self.type_vocab:
            out.append(WeightTensor("token_type_embeddings.weight", (self.type_vocab, h), "position"))
        if (self.encoder and not self.image) or self.embed_norm:  # BERT's / BLOOM's embedding LayerNorm
            out += _norm("embeddings.LayerNorm", h, self.norm)
        for i, layer in enumerate(self.layers):
            out += _layer_tensors(i, layer, h, self.norm)
        out += _norm("norm", h, self.norm) if (not self.encoder or self.image) and self.final_norm else []
        if self.lm_head and not self.tie_embeddings:
            out.append(WeightTensor("lm_head.weight", (self.vocab, self.embed_dim or h), "lm_head"))
        if self.lm_head and self.lm_head_bias:
            out.append(WeightTensor("lm_head.bias", (self.vocab,), "bias"))
        if self.pooler:
            out += [WeightTensor("pooler.dense.weight", (h, h), "pooler"), WeightTensor("pooler.dense.bias", (h,), "bias")]
        if self.classifier:
            out += [WeightTensor("classifier.weight", (self.classifier, h), "classifier"),
                    WeightTensor("classifier.bias", (self.classifier,), "bias")]
        return tuple(out) + self.extra_tensors

    @property
    def params(self) -> int:
        return _params(self)

    @property
    def active_params(self) -> int:
        """Parameters used per token: routed experts count top_k of `experts`; everything else counts."""
        total = 0
        for t in self.tensors():
            if t.role == "expert":
                mlp = self.layers[t.layer].mlp
                total += t.numel * mlp.top_k // mlp.experts
            else:
                total += t.numel
        return total

    @property
    def is_recurrent(self) -> bool:
        """Some layers keep a fixed recurrent state (state-space layers) rather than a KV cache."""
        return any(layer.ssm is not None for layer in self.layers)

    def state_elements_per_sequence(self) -> int:
        """Recurrent-state elements one sequence holds over all layers, whatever its length."""
        return sum(layer.ssm.state_elements for layer in self.layers if layer.ssm is not None)

    def cross_kv_elements_per_sequence(self) -> int:
        """Cross-attention K/V one sequence holds over all decoder layers (fixed by the encoder length)."""
        return sum(self.cross_source * 2 * a.heads * a.head_dim for a in (layer.attention for layer in self.layers)) \
            if self.cross_source else 0

    def kv_elements_per_token(self, layer: LayerSpec) -> int:
        """Cache elements one token adds to one layer (keys + values; MLA: the latent + RoPE key)."""
        a = layer.attention
        if layer.ssm is not None:
            return 0
        if a.mla is not None and a.mla.expanded_v_dim:
            return a.heads * (a.head_dim + a.mla.expanded_v_dim)
        if a.mla is not None:
            return a.mla.kv_lora_rank + a.mla.qk_rope_head_dim
        return a.kv_heads * (a.head_dim + a.v_head_dim)


_ARCH_FIELDS = tuple(f for f in fields(ModelArch) if f.name != "_hash")


@lru_cache(maxsize=64)
def _tensors(arch: ModelArch) -> tuple[WeightTensor, ...]:
    return arch._build_tensors()


@lru_cache(maxsize=64)
def _is_moe(arch: ModelArch) -> bool:
    """Whether any layer routes to experts: read on every priced step, kept per architecture (equal architectures
    share it; an 80-layer model costs 80 look-ups a call otherwise)."""
    return any(layer.mlp.is_moe for layer in arch.layers)


@lru_cache(maxsize=64)
def _params(arch: ModelArch) -> int:
    return sum(t.numel for t in arch.tensors())


def _norm(name: str, h: int, kind: str) -> list[WeightTensor]:
    if kind == "layer_noaffine":
        return []
    out = [WeightTensor(f"{name}.weight", (h,), "norm")]
    if kind == "layer":
        out.append(WeightTensor(f"{name}.bias", (h,), "norm"))
    return out


def _linear(name: str, n_in: int, n_out: int, role: str, layer: int, bias: bool) -> list[WeightTensor]:
    out = [WeightTensor(f"{name}.weight", (n_out, n_in), role, layer)]
    if bias:
        out.append(WeightTensor(f"{name}.bias", (n_out,), "bias", layer))
    return out


def _layer_tensors(i: int, layer: LayerSpec, h: int, norm: str) -> list[WeightTensor]:
    p, a, m, out = f"layers.{i}", layer.attention, layer.mlp, []
    for n in range(layer.norms):
        out += [WeightTensor(t.name, t.shape, t.role, i) for t in _norm(f"{p}.norm{n}", h, norm)]
    if layer.ssm is not None:
        out += _ssm_tensors(f"{p}.mixer", layer.ssm, h, i)
        return out + (_mlp_block(p, m, h, i) if m.intermediate else [])
    if a.mla is not None:
        q = a.mla
        if q.q_lora_rank:
            out += _linear(f"{p}.attn.q_a_proj", h, q.q_lora_rank, "attention", i, False)
            out.append(WeightTensor(f"{p}.attn.q_a_layernorm.weight", (q.q_lora_rank,), "norm", i))
            out += _linear(f"{p}.attn.q_b_proj", q.q_lora_rank, a.heads * a.head_dim, "attention", i, False)
        else:
            out += _linear(f"{p}.attn.q_proj", h, a.heads * a.head_dim, "attention", i, False)
        out += _linear(f"{p}.attn.kv_a_proj_with_mqa", h, q.kv_lora_rank + q.qk_rope_head_dim, "attention", i, False)
        out.append(WeightTensor(f"{p}.attn.kv_a_layernorm.weight", (q.kv_lora_rank,), "norm", i))
        out += _linear(f"{p}.attn.kv_b_proj", q.kv_lora_rank, a.heads * (q.qk_nope_head_dim + q.v_head_dim),
                       "attention", i, False)
    else:  # a gated attention's q_proj also emits the output gate
        out += _linear(f"{p}.attn.q_proj", h, a.heads * a.head_dim * (2 if a.output_gate else 1), "attention", i,
                       a.qkv_bias)
        out += _linear(f"{p}.attn.k_proj", h, a.kv_heads * a.head_dim, "attention", i, a.qkv_bias)
        out += _linear(f"{p}.attn.v_proj", h, a.kv_heads * a.v_head_dim, "attention", i, a.qkv_bias)
        if a.qk_norm:
            out += [WeightTensor(f"{p}.attn.q_norm.weight", (a.head_dim,), "norm", i),
                    WeightTensor(f"{p}.attn.k_norm.weight", (a.head_dim,), "norm", i)]
        if a.sinks:
            out.append(WeightTensor(f"{p}.attn.sinks", (a.heads,), "attention", i))
    out += _linear(f"{p}.attn.o_proj", a.heads * a.v_head_dim, h, "attention", i, a.o_bias)
    return out + _mlp_block(p, m, h, i)


def _mlp_block(p: str, m: MLPSpec, h: int, i: int) -> list[WeightTensor]:
    """The MLP of layer `i` (prefix `p`): routed experts with their router and shared experts, or a dense MLP."""
    out: list[WeightTensor] = []
    if m.is_moe:
        out.append(WeightTensor(f"{p}.mlp.gate.weight", (m.experts, h), "router", i))
        if m.router_bias:
            out.append(WeightTensor(f"{p}.mlp.gate.e_score_correction_bias", (m.experts,), "router", i))
        if m.router_linear_bias:
            out.append(WeightTensor(f"{p}.mlp.gate.bias", (m.experts,), "router", i))
        # routed experts stacked on a leading axis, as fused-MoE kernels hold them
        for proj, shape in (("gate_proj", (m.intermediate, h)), ("up_proj", (m.intermediate, h)),
                            ("down_proj", (h, m.intermediate))):
            out.append(WeightTensor(f"{p}.mlp.experts.{proj}", (m.experts, *shape), "expert", i))
            if m.bias:  # per-expert biases (gpt-oss)
                out.append(WeightTensor(f"{p}.mlp.experts.{proj}_bias", (m.experts, shape[0]), "expert", i))
        if m.shared_experts:
            out += _mlp(f"{p}.mlp.shared_experts", h, m.shared_intermediate * m.shared_experts, True, False,
                        "shared_expert", i)
        if m.shared_gate:
            out.append(WeightTensor(f"{p}.mlp.shared_expert_gate.weight", (1, h), "router", i))
    else:
        out += _mlp(f"{p}.mlp", h, m.intermediate, m.gated, m.bias, "mlp", i)
    return out


def _mlp(name: str, h: int, inter: int, gated: bool, bias: bool, role: str, layer: int) -> list[WeightTensor]:
    out = []
    if gated:
        out += _linear(f"{name}.gate_proj", h, inter, role, layer, bias)
    out += _linear(f"{name}.up_proj", h, inter, role, layer, bias)
    out += _linear(f"{name}.down_proj", inter, h, role, layer, bias)
    return out


def _ssm_tensors(p: str, s: SSMSpec, h: int, i: int) -> list[WeightTensor]:
    """The weights of a Mamba / Mamba-2 mixer, as transformers' MambaMixer / Mamba2Mixer hold them."""
    channels = s.conv_channels
    if s.version == 1:
        out = _linear(f"{p}.in_proj", h, 2 * s.inner, "ssm", i, s.bias)
    elif s.version == 3:  # q, k, v and z; then β and the decay's Δ per value head
        out = _linear(f"{p}.in_proj_qkvz", h, channels + s.inner, "ssm", i, s.bias)
        out += _linear(f"{p}.in_proj_ba", h, 2 * s.heads, "ssm", i, s.bias)
    else:  # z, x, B, C and dt in one projection
        out = _linear(f"{p}.in_proj", h, s.inner + channels + s.heads, "ssm", i, s.bias)
    out.append(WeightTensor(f"{p}.conv1d.weight", (channels, 1, s.conv), "ssm", i))
    if s.conv_bias:
        out.append(WeightTensor(f"{p}.conv1d.bias", (channels,), "bias", i))
    if s.version == 1:
        out += _linear(f"{p}.x_proj", s.inner, s.dt_rank + 2 * s.state, "ssm", i, False)
        out += _linear(f"{p}.dt_proj", s.dt_rank, s.inner, "ssm", i, True)
        out += [WeightTensor(f"{p}.A_log", (s.inner, s.state), "ssm", i), WeightTensor(f"{p}.D", (s.inner,), "ssm", i)]
    elif s.version == 3:  # no D; the gated RMSNorm is one value head wide, shared by the heads
        out += [WeightTensor(f"{p}.dt_bias", (s.heads,), "ssm", i), WeightTensor(f"{p}.A_log", (s.heads,), "ssm", i),
                WeightTensor(f"{p}.norm.weight", (s.inner // s.heads,), "norm", i)]
    else:
        out += [WeightTensor(f"{p}.dt_bias", (s.heads,), "ssm", i), WeightTensor(f"{p}.A_log", (s.heads,), "ssm", i),
                WeightTensor(f"{p}.D", (s.heads,), "ssm", i), WeightTensor(f"{p}.norm.weight", (s.inner,), "norm", i)]
    return out + _linear(f"{p}.out_proj", s.inner, h, "ssm", i, s.bias)
