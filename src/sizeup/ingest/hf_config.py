"""Hugging Face `config.json` -> `ModelArch`: the exact tensors of a transformer, decided by `model_type`
and explicit fields (never guessed from a size ratio).

Supported: dense decoders (llama, mistral, qwen2, qwen3, phi3, gemma, gemma2, gemma3), MoE decoders
(mixtral, qwen2_moe, qwen3_moe), DeepSeek V2/V3 (multi-head latent attention + MoE), GPT-2, and the
encoders BERT and ViT. An unknown `model_type` that has the standard decoder fields is read as a
LLaMA-style decoder, and the result says so.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from sizeup.errors import ConfigError, ResolveError

__all__ = ["AttentionSpec", "MLPSpec", "LayerSpec", "ModelArch", "WeightTensor", "parse_config", "load_model",
           "list_presets"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MLASpec:
    """DeepSeek multi-head latent attention: queries through an optional low-rank path, keys and
    values compressed to a shared latent of `kv_lora_rank` plus a decoupled RoPE key."""

    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


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

    @property
    def is_moe(self) -> bool:
        return self.experts > 0


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerSpec:
    attention: AttentionSpec
    mlp: MLPSpec
    norms: int = 2
    """hidden-sized norms in the layer (2 pre-norms; Gemma 2/3 add post-norms: 4)."""


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
    """rms | layer (LayerNorm with bias)."""
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

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    @property
    def is_moe(self) -> bool:
        return any(layer.mlp.is_moe for layer in self.layers)

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
            out.append(WeightTensor("embed_tokens.weight", (self.vocab, h), "embedding"))
        if self.positions and not self.image:
            out.append(WeightTensor("position_embeddings.weight", (self.positions, h), "position"))
        if self.type_vocab:
            out.append(WeightTensor("token_type_embeddings.weight", (self.type_vocab, h), "position"))
        if self.encoder and not self.image:  # BERT's embedding LayerNorm
            out += _norm("embeddings.LayerNorm", h, self.norm)
        for i, layer in enumerate(self.layers):
            out += _layer_tensors(i, layer, h, self.norm)
        out += _norm("norm", h, self.norm) if (not self.encoder or self.image) else []
        if self.lm_head and not self.tie_embeddings:
            out.append(WeightTensor("lm_head.weight", (self.vocab, h), "lm_head"))
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

    def kv_elements_per_token(self, layer: LayerSpec) -> int:
        """Cache elements one token adds to one layer (keys + values; MLA: the latent + RoPE key)."""
        a = layer.attention
        if a.mla is not None:
            return a.mla.kv_lora_rank + a.mla.qk_rope_head_dim
        return a.kv_heads * (a.head_dim + a.v_head_dim)


@lru_cache(maxsize=64)
def _tensors(arch: ModelArch) -> tuple[WeightTensor, ...]:
    return arch._build_tensors()


@lru_cache(maxsize=64)
def _params(arch: ModelArch) -> int:
    return sum(t.numel for t in arch.tensors())


def _norm(name: str, h: int, kind: str) -> list[WeightTensor]:
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
    else:
        out += _linear(f"{p}.attn.q_proj", h, a.heads * a.head_dim, "attention", i, a.qkv_bias)
        out += _linear(f"{p}.attn.k_proj", h, a.kv_heads * a.head_dim, "attention", i, a.qkv_bias)
        out += _linear(f"{p}.attn.v_proj", h, a.kv_heads * a.v_head_dim, "attention", i, a.qkv_bias)
        if a.qk_norm:
            out += [WeightTensor(f"{p}.attn.q_norm.weight", (a.head_dim,), "norm", i),
                    WeightTensor(f"{p}.attn.k_norm.weight", (a.head_dim,), "norm", i)]
    out += _linear(f"{p}.attn.o_proj", a.heads * a.v_head_dim, h, "attention", i, a.o_bias)
    if m.is_moe:
        out.append(WeightTensor(f"{p}.mlp.gate.weight", (m.experts, h), "router", i))
        if m.router_bias:
            out.append(WeightTensor(f"{p}.mlp.gate.e_score_correction_bias", (m.experts,), "router", i))
        # routed experts stacked on a leading axis, as fused-MoE kernels hold them
        for proj, shape in (("gate_proj", (m.intermediate, h)), ("up_proj", (m.intermediate, h)),
                            ("down_proj", (h, m.intermediate))):
            out.append(WeightTensor(f"{p}.mlp.experts.{proj}", (m.experts, *shape), "expert", i))
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


# ---- parsing ----------------------------------------------------------------------------------

class _Config:
    """Field access that names the missing or malformed key."""

    def __init__(self, data: dict[str, Any], where: str) -> None:
        self.data, self.where = data, where

    def int(self, *keys: str, default: int | None = None) -> int:
        for key in keys:
            value = self.data.get(key)
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ConfigError(f"{self.where}: field {key!r} = {value!r}: expected a non-negative integer")
                return value
        if default is not None:
            return default
        raise ConfigError(f"{self.where}: missing field {keys[0]!r} (needed for model_type "
                          f"{self.data.get('model_type')!r})")

    def get(self, key: str, default: Any = None) -> Any:
        value = self.data.get(key)
        return default if value is None else value


_GELU_TANH = {"gelu_pytorch_tanh", "gelu_new", "gelu_fast", "gelu_tanh"}
DENSE_DECODERS = {"llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "gemma3_text", "mixtral",
                  "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "olmo2", "granite", "nemotron"}
# decoders whose MLP is a plain up/down pair (Nemotron: squared ReLU, no gate) and whose norm is LayerNorm
_PLAIN_MLP_DECODERS = {"nemotron"}
SUPPORTED = sorted(DENSE_DECODERS | {"gpt2", "bert", "vit", "gemma3"})


def _act(name: str) -> str:
    name = str(name or "silu").lower()
    if name in _GELU_TANH:
        return "gelu_tanh"
    if name in ("gelu", "gelu_python"):
        return "gelu_erf"
    return "silu" if name in ("silu", "swish") else name


def parse_config(data: dict[str, Any], name: str = "model", where: str = "config.json") -> ModelArch:
    """Build the architecture of a `config.json` mapping; errors name the field."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a JSON object")
    model_type = str(data.get("model_type") or "")
    if model_type in ("gemma3", "llava", "mistral3") and isinstance(data.get("text_config"), dict):
        inner = dict(data["text_config"])  # a copy: defaults are filled in below
        inner.setdefault("model_type", "gemma3_text" if model_type == "gemma3" else inner.get("model_type", ""))
        arch = parse_config(inner, name, f"{where} (text_config)")
        notes = arch.assumptions + (f"{model_type}: the language model only; the vision tower "
                                    f"(vision_config) is not counted",)
        return _replace(arch, assumptions=notes)
    c = _Config(dict(data), where)
    if model_type in ("gpt2", "bert", "vit"):
        arch = {"gpt2": _gpt2, "bert": _bert, "vit": _vit}[model_type](c, name)
        return _replace(arch, dropout=_dropout(data))
    assumptions: list[str] = []
    if model_type not in DENSE_DECODERS:
        needed = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size")
        missing = [k for k in needed if data.get(k) is None]
        if missing or not model_type:
            raise ConfigError(f"{where}: unknown model_type {model_type!r} and no {missing[0] if missing else 'model_type'}"
                              f" field: supported model types are {', '.join(SUPPORTED)}")
        assumptions.append(f"unknown model_type {model_type!r}: read as a LLaMA-style decoder "
                           f"(RMSNorm, RoPE, {'gated' if _act(data.get('hidden_act')) == 'silu' else 'plain'} MLP)")
    return _replace(_decoder(c, name, model_type, assumptions), dropout=_dropout(data))


_DROPOUT_KEYS = ("attention_dropout", "attn_pdrop", "resid_pdrop", "embd_pdrop", "hidden_dropout",
                 "hidden_dropout_prob", "attention_probs_dropout_prob", "dropout")


def _dropout(data: dict[str, Any]) -> float:
    values = [data.get(k) for k in _DROPOUT_KEYS]
    return max([float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)] or [0.0])


def _replace(arch: ModelArch, **changes: Any) -> ModelArch:
    from dataclasses import replace

    return replace(arch, **changes)


def _layer_windows(c: _Config, model_type: str, layers: int) -> list[int | None]:
    window = c.get("sliding_window")
    types = c.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        return [window if t == "sliding_attention" else None for t in types]
    if model_type == "gemma2":
        return [window if i % 2 == 0 else None for i in range(layers)]
    if model_type in ("gemma3_text",):
        pattern = c.int("sliding_window_pattern", default=6)
        return [None if (i + 1) % pattern == 0 else window for i in range(layers)]
    if model_type in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe"):
        if not c.get("use_sliding_window", False):
            return [None] * layers
        first_full = c.int("max_window_layers", default=layers)
        return [window if i >= first_full else None for i in range(layers)]
    return [window or None] * layers


# Defaults of the transformers config classes, for fields a config.json may leave out.
_CLASS_DEFAULTS = {
    "gemma3_text": {"vocab_size": 262_208, "sliding_window": 4096, "head_dim": 256},  # Gemma3TextConfig
}


def _decoder(c: _Config, name: str, model_type: str, assumptions: list[str]) -> ModelArch:
    for key, value in _CLASS_DEFAULTS.get(model_type, {}).items():
        if c.data.get(key) is None:
            c.data[key] = value
            assumptions.append(f"{key} not in the config: the {model_type} class default {value:,}")
    h = c.int("hidden_size")
    n_layers = c.int("num_hidden_layers")
    heads = c.int("num_attention_heads")
    kv_heads = c.int("num_key_value_heads", default=heads)
    if heads == 0 or h == 0:
        raise ConfigError(f"{c.where}: hidden_size and num_attention_heads must be positive")
    if kv_heads == 0 or heads % kv_heads:
        raise ConfigError(f"{c.where}: num_key_value_heads = {kv_heads} must divide num_attention_heads = {heads}")
    head_dim = c.int("head_dim", default=h // heads)
    vocab = c.int("vocab_size")
    act = _act(c.get("hidden_act", c.get("hidden_activation")))
    bias = bool(c.get("attention_bias", False))
    qkv_bias = model_type in ("qwen2", "qwen2_moe") or bias
    mla = None
    if model_type in ("deepseek_v2", "deepseek_v3"):
        mla = MLASpec(q_lora_rank=c.get("q_lora_rank"), kv_lora_rank=c.int("kv_lora_rank"),
                      qk_nope_head_dim=c.int("qk_nope_head_dim"), qk_rope_head_dim=c.int("qk_rope_head_dim"),
                      v_head_dim=c.int("v_head_dim"))
    windows = _layer_windows(c, model_type, n_layers)
    norms = 4 if model_type in ("gemma2", "gemma3_text") else 2
    layers = []
    for i in range(n_layers):
        if mla is not None:
            attention = AttentionSpec(heads=heads, kv_heads=heads, head_dim=mla.qk_nope_head_dim + mla.qk_rope_head_dim,
                                      v_head_dim=mla.v_head_dim, mla=mla)
        else:
            attention = AttentionSpec(heads=heads, kv_heads=kv_heads, head_dim=head_dim, v_head_dim=head_dim,
                                      window=windows[i], qkv_bias=qkv_bias, o_bias=bias and model_type != "qwen2",
                                      qk_norm=model_type in ("qwen3", "qwen3_moe", "gemma3_text", "olmo2"))
        layers.append(LayerSpec(attention=attention, mlp=_mlp_spec(c, model_type, i, act), norms=norms))
    tie = bool(c.get("tie_word_embeddings", model_type in ("gemma", "gemma2", "gemma3_text")))
    mtp = c.int("num_nextn_predict_layers", default=0)
    if mtp:
        assumptions.append(f"{mtp} multi-token-prediction layer(s) in the checkpoint are not counted "
                           f"(inference uses the main model)")
    norm = "layer" if model_type in _PLAIN_MLP_DECODERS else "rms"  # Nemotron: LayerNorm1p, with a bias
    return ModelArch(name=name, model_type=model_type, hidden=h, vocab=vocab, layers=tuple(layers), norm=norm,
                     tie_embeddings=tie, embed_scale=model_type.startswith("gemma"),
                     max_context=c.int("max_position_embeddings", default=0), mtp_layers=mtp,
                     assumptions=tuple(assumptions))


def _mlp_spec(c: _Config, model_type: str, i: int, act: str) -> MLPSpec:
    gated = (model_type in DENSE_DECODERS and model_type not in _PLAIN_MLP_DECODERS) or act == "silu"
    dense = MLPSpec(intermediate=c.int("intermediate_size"), gated=gated, act=act,
                    bias=bool(c.get("mlp_bias", False)))
    if model_type == "mixtral":
        return MLPSpec(intermediate=c.int("intermediate_size"), gated=True, act=act,
                       experts=c.int("num_local_experts"), top_k=c.int("num_experts_per_tok"))
    if model_type in ("qwen2_moe", "qwen3_moe"):
        step = c.int("decoder_sparse_step", default=1)
        dense_layers = set(c.get("mlp_only_layers", []) or [])
        experts = c.int("num_experts")
        if experts == 0 or i in dense_layers or (i + 1) % max(step, 1):
            return dense
        shared = c.int("shared_expert_intermediate_size", default=0)
        return MLPSpec(intermediate=c.int("moe_intermediate_size"), gated=True, act=act, experts=experts,
                       top_k=c.int("num_experts_per_tok"), shared_experts=1 if shared else 0,
                       shared_intermediate=shared, shared_gate=bool(shared))
    if model_type in ("deepseek_v2", "deepseek_v3"):
        routed = c.int("n_routed_experts", default=0)
        freq = c.int("moe_layer_freq", default=1)
        if not routed or i < c.int("first_k_dense_replace", default=0) or i % max(freq, 1):
            return dense
        return MLPSpec(intermediate=c.int("moe_intermediate_size"), gated=True, act=act, experts=routed,
                       top_k=c.int("num_experts_per_tok"), shared_experts=c.int("n_shared_experts", default=0),
                       shared_intermediate=c.int("moe_intermediate_size"),
                       router_bias=c.get("topk_method") == "noaux_tc")
    return dense


def _gpt2(c: _Config, name: str) -> ModelArch:
    h = c.int("n_embd", "hidden_size")
    heads = c.int("n_head", "num_attention_heads")
    inner = c.int("n_inner", default=4 * h)
    attn = AttentionSpec(heads=heads, kv_heads=heads, head_dim=h // heads, v_head_dim=h // heads, qkv_bias=True,
                         o_bias=True)
    mlp = MLPSpec(intermediate=inner, gated=False, act=_act(c.get("activation_function", "gelu_new")), bias=True)
    layers = tuple(LayerSpec(attention=attn, mlp=mlp) for _ in range(c.int("n_layer", "num_hidden_layers")))
    return ModelArch(name=name, model_type="gpt2", hidden=h, vocab=c.int("vocab_size"), layers=layers, norm="layer",
                     tie_embeddings=True, positions=c.int("n_positions", "max_position_embeddings"),
                     max_context=c.int("n_positions", "max_position_embeddings"))


def _encoder_layers(c: _Config, qkv_bias: bool) -> tuple[LayerSpec, ...]:
    h, heads = c.int("hidden_size"), c.int("num_attention_heads")
    attn = AttentionSpec(heads=heads, kv_heads=heads, head_dim=h // heads, v_head_dim=h // heads, qkv_bias=qkv_bias,
                         o_bias=True, causal=False)
    mlp = MLPSpec(intermediate=c.int("intermediate_size"), gated=False, act=_act(c.get("hidden_act", "gelu")), bias=True)
    return tuple(LayerSpec(attention=attn, mlp=mlp) for _ in range(c.int("num_hidden_layers")))


def _bert(c: _Config, name: str) -> ModelArch:
    return ModelArch(name=name, model_type="bert", hidden=c.int("hidden_size"), vocab=c.int("vocab_size"),
                     layers=_encoder_layers(c, True), norm="layer", positions=c.int("max_position_embeddings"),
                     type_vocab=c.int("type_vocab_size", default=2), encoder=True, lm_head=False, pooler=True,
                     max_context=c.int("max_position_embeddings"),
                     assumptions=("BertModel with its pooler; no task head",))


def _vit(c: _Config, name: str) -> ModelArch:
    labels = c.get("num_labels") or len(c.get("id2label") or {}) or 0
    assumptions = []
    archs = c.get("architectures") or []
    if "ViTForImageClassification" in archs and not labels:
        labels = 1000
        assumptions.append("ViTForImageClassification with 1000 labels (config lists none)")
    size, patch = c.int("image_size"), c.int("patch_size")
    return ModelArch(name=name, model_type="vit", hidden=c.int("hidden_size"), vocab=0,
                     layers=_encoder_layers(c, bool(c.get("qkv_bias", True))), norm="layer", encoder=True,
                     lm_head=False, pooler=not labels, classifier=labels,
                     image=(size, patch, c.int("num_channels", default=3)), max_context=(size // patch) ** 2 + 1,
                     assumptions=tuple(assumptions))


# ---- presets and files ------------------------------------------------------------------------

def _models_dir() -> Path:
    from sizeup.hardware.catalog import builtin_data_dir

    return builtin_data_dir() / "models"


@lru_cache(maxsize=1)
def _preset_index() -> tuple[dict[str, Path], dict[str, str]]:
    from sizeup.hardware.resolve import normalize_name

    paths, names = {}, {}
    for path in sorted(_models_dir().glob("*.json")):
        paths[path.stem] = path
        try:
            meta = json.loads(path.read_text()).get("sizeup", {})
        except (json.JSONDecodeError, OSError) as e:
            raise ConfigError(f"{path}: not valid JSON ({e})") from e
        for alias in (path.stem, meta.get("hf_id", ""), *meta.get("aliases", [])):
            if alias:
                names.setdefault(normalize_name(alias), path.stem)
    return paths, names


def list_presets() -> list[str]:
    return sorted(_preset_index()[0])


def load_model(name_or_path: str) -> ModelArch:
    """A preset (short name or Hugging Face id), a `config.json`, a model folder, or the header of a
    `.safetensors` / `.gguf` file."""
    from sizeup.hardware.resolve import closest, normalize_name

    path = Path(name_or_path).expanduser()
    if path.suffix in (".safetensors", ".gguf") or (path.exists() and not path.is_dir() and path.suffix != ".json"):
        from sizeup.ingest.headers import model_from_header

        return model_from_header(path)
    if path.is_dir():
        path = path / "config.json"
        if not path.is_file():
            raise ConfigError(f"model folder {name_or_path!r} has no config.json")
    if path.suffix == ".json" or path.is_file():
        if not path.is_file():
            raise ConfigError(f"config file {name_or_path!r} does not exist")
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path}: not valid JSON (line {e.lineno}: {e.msg})") from None
        if isinstance(data, dict) and "config" in data and "sizeup" in data:
            data = data["config"]
        return parse_config(data, name=path.parent.name or path.stem, where=str(path))
    paths, names = _preset_index()
    key = normalize_name(name_or_path)
    if key not in names:
        hint = ", ".join(closest(name_or_path, names))
        raise ResolveError(f"unknown model {name_or_path!r}{'; closest: ' + hint if hint else ''} "
                           f"(a preset name, a Hugging Face id of a preset, or a path to config.json)")
    preset = paths[names[key]]
    data = json.loads(preset.read_text())
    return parse_config(data["config"], name=preset.stem, where=str(preset))
