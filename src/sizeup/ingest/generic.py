"""The generic reader: any `model_type` transformers knows, built from its config.json on the meta device
(no weights, no network, never remote code), read as its exact parameter inventory by module path.

It is the fallback for a `model_type` no analytic family reads, and the check of the analytic families
(their parameter counts must equal what transformers builds). The inventory maps each parameter to a role
by module-name rules (`role_of`); the layer stack is mapped onto sizeup's `LayerSpec`s from the real
weight shapes, so the estimate prices it like an analytic model, and every parameter the mapping does
not cover (a vision tower, a projector, an odd bias) is carried as an extra tensor with its real name and
shape: the parameter count is exact, and what is not priced as compute is said. `generic_ledger` traces
one forward step on fake tensors (sizeup.ingest.torch_trace) for the FLOPs, bytes and activations of
a model whose structure does not map.

torch and transformers are imported inside the functions only: the core never loads them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sizeup.errors import ConfigError, IngestError
from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLPSpec, ModelArch, WeightTensor

__all__ = ["ParamInventory", "InventoryTensor", "transformers_available", "transformers_reader", "build_meta_model",
           "param_inventory", "role_of", "known_model_type", "read_generic", "generic_ledger", "INSTALL_HINT"]

INSTALL_HINT = "pip install 'sizeup[hf]'"

_ROLE_RULES: tuple[tuple[str, str], ...] = (
    (r"(^|\.)(vision_tower|vision_model|visual|vision_encoder|image_encoder|vit)(\.|$)", "vision"),
    (r"(^|\.)(multi_modal_projector|mm_projector|projector|merger|connector)(\.|$)", "projector"),
    (r"(^|\.)(shared_experts?|shared_mlp)(\.|$)", "shared_expert"),
    (r"(^|\.)experts(\.|$)", "expert"),
    (r"(^|\.)(router|gate\.weight$|gate\.e_score_correction_bias$|shared_expert_gate)", "router"),
    (r"(^|\.)(mixer|ssm|mamba|conv1d|A_log|dt_proj|x_proj)(\.|$)|(^|\.)(A_log|D)$", "ssm"),
    (r"(^|\.)(lm_head|output_projection|embed_out)(\.|$)", "lm_head"),
    (r"(position|pos_emb|wpe|relative_attention_bias|rel_embeddings)", "position"),
    (r"token_type", "position"),
    (r"(norm|(^|\.)ln_?\w*(\.|$)|layernorm|LayerNorm)", "norm"),
    (r"(^|\.)(embed_tokens|word_embeddings|wte|tok_embeddings|embeddings?|shared)(\.|$)", "embedding"),
    (r"(^|\.)(self_attn|attn|attention|self_attention|cross_attn|crossattention|encdecattention|encoder_attn)(\.|$)",
     "attention"),
    (r"(^|\.)(mlp|ffn|feed_forward|intermediate|output|fc1|fc2|densereludense|block_sparse_moe)(\.|$)", "mlp"),
    (r"(^|\.)pooler(\.|$)", "pooler"),
    (r"(^|\.)(classifier|score|qa_outputs)(\.|$)", "classifier"),
)
_ROLE_PATTERNS = tuple((re.compile(p), role) for p, role in _ROLE_RULES)
_PART_RULES = ((re.compile(r"(^|\.)encoder(\.|$)"), "encoder"), (re.compile(r"(^|\.)decoder(\.|$)"), "decoder"))


def role_of(path: str) -> str:
    """The role of a parameter from its module path: vision, projector, expert, shared_expert, router,
    ssm, lm_head, position, embedding, norm, attention, mlp, pooler, classifier; else the part of an
    encoder-decoder it sits in (encoder / decoder), else "other". The first rule that matches wins."""
    for pattern, role in _ROLE_PATTERNS:
        if pattern.search(path):
            return role
    for pattern, part in _PART_RULES:
        if pattern.search(path):
            return part
    return "other"


@dataclass(frozen=True, slots=True)
class InventoryTensor:
    name: str
    shape: tuple[int, ...]
    role: str

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True, slots=True, kw_only=True)
class ParamInventory:
    """The exact parameters transformers builds from a config (tied parameters once)."""

    model_class: str
    reader: str
    tensors: tuple[InventoryTensor, ...]

    @property
    def params(self) -> int:
        return sum(t.numel for t in self.tensors)

    def by_role(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.tensors:
            out[t.role] = out.get(t.role, 0) + t.numel
        return out


def transformers_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("transformers") is not None and importlib.util.find_spec("torch") is not None


def transformers_reader() -> str:
    """The reader's name as estimates show it: "transformers <version> (meta device)"."""
    import importlib.metadata

    return f"transformers {importlib.metadata.version('transformers')} (meta device)"


def known_model_type(model_type: str) -> bool | None:
    """Whether transformers has a config class for `model_type`, from its table of config classes
    (transformers 5's `auto_mappings.py`, a plain dict) read without importing transformers, which loads
    torch; None when the installed version keeps the table elsewhere (then transformers is imported)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.origin:
        return None
    path = Path(spec.origin).parent / "models" / "auto" / "auto_mappings.py"
    if not path.is_file():
        return None
    loader = importlib.util.spec_from_file_location("_sizeup_transformers_auto_mappings", path)
    if loader is None or loader.loader is None:
        return None
    module = importlib.util.module_from_spec(loader)
    try:
        loader.loader.exec_module(module)
        return model_type in module.CONFIG_MAPPING_NAMES
    except Exception:  # a layout this reader does not know: ask transformers itself
        return None


def _config(data: dict[str, Any], where: str) -> Any:
    if "auto_map" in data:
        raise ConfigError(f"{where}: the config has 'auto_map' (a model defined by remote code): sizeup does not "
                          f"run remote code")
    model_type = data.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise ConfigError(f"{where}: no model_type: expected the model_type of a transformers architecture")
    if known_model_type(model_type) is False:
        raise _unknown(where, model_type)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    if model_type not in CONFIG_MAPPING:
        raise _unknown(where, model_type)
    fields = {k: v for k, v in data.items() if k != "model_type"}
    try:
        return AutoConfig.for_model(model_type, **fields)
    except Exception as e:  # transformers' own validation of the fields
        raise ConfigError(f"{where}: transformers refused the {model_type} config: {type(e).__name__}: "
                          f"{_first_line(e)}") from e


def _unknown(where: str, model_type: str) -> ConfigError:
    return ConfigError(f"{where}: unknown model_type {model_type!r}: no sizeup family reads it and "
                       f"{transformers_reader().split(' (')[0]} does not know it")


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:200] if text else ""


def _model_class(config: Any, data: dict[str, Any], head: bool | None) -> Any:
    """The class to build: the config's own `architectures[0]` when it is a language-model or generation
    head (or `head` is True and it names any transformers class), else the base model (AutoModel)."""
    import transformers

    first = _first_architecture(data)
    cls = getattr(transformers, first, None) if first else None
    wants_head = head if head is not None else _generates(config, data)
    if cls is not None and wants_head and isinstance(cls, type):
        return cls
    if head and cls is None:
        from transformers import AutoModelForCausalLM

        try:
            return AutoModelForCausalLM._model_mapping[type(config)]
        except KeyError:
            pass
    from transformers import AutoModel

    try:
        return AutoModel._model_mapping[type(config)]
    except KeyError:
        raise ConfigError(f"model_type {config.model_type!r}: transformers has no model class for it") from None


def _first_architecture(data: dict[str, Any]) -> str:
    names = data.get("architectures") or []
    return names[0] if isinstance(names, list) and names and isinstance(names[0], str) else ""


def _generates(config: Any, data: dict[str, Any]) -> bool:
    """A causal language model: the config names a *ForCausalLM / *ForConditionalGeneration class, or names
    none and its type has a causal-LM class but no masked-LM one (LLaMA yes, BERT no)."""
    first = _first_architecture(data)
    if first:
        return bool(re.search(r"For(CausalLM|ConditionalGeneration)$", first))
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, MODEL_FOR_MASKED_LM_MAPPING_NAMES

    return config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and \
        config.model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES


def build_meta_model(data: dict[str, Any], *, where: str = "config.json", head: bool | None = None) -> Any:
    """The transformers model of a config.json mapping, built on the meta device (no memory, no
    initialisation); `head`: True for the class of `architectures[0]`, False for the base model, None
    for the language-model head only when the config names one."""
    config = _config(data, where)
    import torch
    from transformers.initialization import no_init_weights

    cls = _model_class(config, data, head)
    try:
        with torch.device("meta"), no_init_weights():
            model = cls(config)
            model.tie_weights()  # no_init_weights also skips the tying that initialisation does
            return model
    except Exception as e:
        raise IngestError(f"{where}: transformers could not build {cls.__name__}: {type(e).__name__}: "
                          f"{_first_line(e)}") from e


def param_inventory(data: dict[str, Any], *, where: str = "config.json", head: bool | None = None) -> ParamInventory:
    """Every parameter of the model transformers builds from `data`, by module path, with its role."""
    model = build_meta_model(data, where=where, head=head)
    tensors = tuple(InventoryTensor(name, tuple(p.shape), role_of(name)) for name, p in model.named_parameters())
    return ParamInventory(model_class=type(model).__name__, reader=transformers_reader(), tensors=tensors)


# ---- the layer stack onto sizeup's LayerSpecs -------------------------------------------------------

def _layer_stack(model: Any) -> tuple[str, Any] | None:
    """(path, ModuleList) of the layer stack: the ModuleList holding the most parameters whose blocks
    each have an attention module."""
    import torch

    best, best_count = None, 0
    for path, module in model.named_modules():
        if not isinstance(module, torch.nn.ModuleList) or not len(module):
            continue
        if not all(any(role_of(f"x.{n}") == "attention" for n, _ in block.named_modules() if n) for block in module):
            continue
        count = sum(p.numel() for p in module.parameters())
        if count > best_count:
            best, best_count = (path, module), count
    return best


def _linears(module: Any) -> dict[str, Any]:
    import torch

    return {n: m for n, m in module.named_modules() if isinstance(m, torch.nn.Linear)}


def _config_int(config: Any, *names: str) -> int | None:
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


class _Unmapped(Exception):
    """The layer's structure does not map onto a LayerSpec (the reason is the message)."""


def _attention_spec(block: Any, h: int, config: Any, causal: bool, index: int) -> tuple[AttentionSpec, set[str]]:
    """The attention of one block from its q/k/v/o linears, and the parameter names it covers."""
    attn_name = next(n for n, _ in block.named_modules() if n and role_of(f"x.{n}") == "attention")
    attn = block.get_submodule(attn_name)
    lin = _linears(attn)
    q = next((m for n, m in lin.items() if re.search(r"(^|\.)(q_proj|query|q|wq)$", n)), None)
    k = next((m for n, m in lin.items() if re.search(r"(^|\.)(k_proj|key|k|wk)$", n)), None)
    v = next((m for n, m in lin.items() if re.search(r"(^|\.)(v_proj|value|v|wv)$", n)), None)
    o = next((m for n, m in lin.items() if re.search(r"(^|\.)(o_proj|out_proj|dense|o|wo|c_proj)$", n)), None)
    fused = next((m for n, m in lin.items() if re.search(r"(^|\.)(qkv_proj|query_key_value|Wqkv|qkv|c_attn|W_pack)$", n)),
                 None)
    if o is None or not ((q and k and v) or fused):
        raise _Unmapped(f"no q/k/v (or fused qkv) and output projections in {attn_name} "
                        f"({', '.join(lin) or 'no linears'})")
    heads = _config_int(config, "num_attention_heads", "n_head", "num_heads")
    if heads is None:
        raise _Unmapped("the number of attention heads is not in the config")
    if q and k and v:
        if q.out_features % heads:
            raise _Unmapped("the query width is not a multiple of the attention heads")
        head_dim = q.out_features // heads
        if k.out_features % head_dim or v.out_features != k.out_features:
            raise _Unmapped("key/value widths do not follow the query heads")
        kv_heads, projections = k.out_features // head_dim, (q, k, v)
        qkv_bias = q.bias is not None
        if (k.bias is not None) != qkv_bias or (v.bias is not None) != qkv_bias:
            raise _Unmapped("q/k/v biases differ")
    else:
        multi_query = getattr(config, "multi_query", False) is True
        kv_heads = 1 if multi_query else _config_int(config, "num_key_value_heads", "num_kv_heads") or heads
        head_dim = _config_int(config, "head_dim") or h // heads
        if fused.out_features != (heads + 2 * kv_heads) * head_dim:
            raise _Unmapped(f"the fused qkv width {fused.out_features:,} is not (heads + 2 × KV heads) × head dim")
        projections, qkv_bias = (fused,), fused.bias is not None
    if o.in_features != heads * head_dim or o.out_features != h or projections[0].in_features != h:
        raise _Unmapped("attention projections are not of the hidden size")
    covered = {f"{attn_name}.{n}.{p}" for n, m in lin.items() if m in (*projections, o) for p, _ in m.named_parameters()}
    norms = {n: m for n, m in attn.named_modules() if n and role_of(f"x.{n}") == "norm"
             and sum(p.numel() for p in m.parameters()) == head_dim}  # hidden-sized: a layer norm (BERT)
    qk_norm = False
    if norms:
        sizes = {sum(p.numel() for p in m.parameters()) for m in norms.values()}
        if len(norms) != 2 or sizes != {head_dim}:
            raise _Unmapped(f"attention norms {', '.join(norms)} are not per-head q/k norms")
        qk_norm = True
        covered |= {f"{attn_name}.{n}.{p}" for n, m in norms.items() for p, _ in m.named_parameters()}
    window = _window(config, index)
    spec = AttentionSpec(heads=heads, kv_heads=kv_heads, head_dim=head_dim, v_head_dim=head_dim,
                         window=window, qkv_bias=qkv_bias, o_bias=o.bias is not None, qk_norm=qk_norm, causal=causal)
    return spec, covered


def _mlp_spec(block: Any, h: int, config: Any) -> tuple[MLPSpec, set[str]]:
    """A dense MLP (gated or plain) from the block's linears outside attention."""
    lin = {n: m for n, m in _linears(block).items() if role_of(f"x.{n}") != "attention"}
    if any(role_of(f"x.{n}") in ("expert", "router", "shared_expert") for n in lin) or \
            any(p.dim() == 3 for p in block.parameters()):
        raise _Unmapped("a mixture-of-experts layer (priced by its analytic family, or traced)")
    ups = [(n, m) for n, m in lin.items() if m.in_features == h and m.out_features != h]
    downs = [(n, m) for n, m in lin.items() if m.out_features == h and m.in_features != h]
    if len(downs) != 1 or len(ups) not in (1, 2) or len(lin) != len(ups) + 1:
        raise _Unmapped(f"the MLP linears {', '.join(lin) or '(none)'} are not up/gate and down projections")
    inter = downs[0][1].in_features
    fused_gate = len(ups) == 1 and ups[0][1].out_features == 2 * inter  # gate and up in one linear (Phi-3)
    if not fused_gate and any(m.out_features != inter for _, m in ups):
        raise _Unmapped("the MLP's up and down widths differ")
    bias = downs[0][1].bias is not None
    if any((m.bias is not None) != bias for _, m in ups):
        raise _Unmapped("the MLP's biases differ")
    act = next((a for a in (getattr(config, k, None) for k in ("hidden_act", "hidden_activation",
                                                                 "activation_function", "activation"))
                if isinstance(a, str)), "silu")
    from sizeup.ingest.families.fields import activation

    covered = {f"{n}.{p}" for n, m in (*ups, *downs) for p, _ in m.named_parameters()}
    return MLPSpec(intermediate=inter, gated=len(ups) == 2 or fused_gate, act=activation(act if isinstance(act, str) else "silu"),
                   bias=bias), covered


def _window(config: Any, index: int) -> int | None:
    """Layer `index`'s sliding window: from the config's `layer_types` when it lists them, else
    `sliding_window` on every layer (unless `use_sliding_window` is false)."""
    window = _config_int(config, "sliding_window") if getattr(config, "use_sliding_window", True) else None
    types = getattr(config, "layer_types", None)
    if isinstance(types, (list, tuple)) and index < len(types):
        return window if types[index] == "sliding_attention" else None
    return window


def _block_spec(block: Any, h: int, config: Any, causal: bool, index: int) -> tuple[LayerSpec, set[str], str]:
    attention, covered = _attention_spec(block, h, config, causal, index)
    mlp, mlp_covered = _mlp_spec(block, h, config)
    covered |= mlp_covered
    norm_mods = [(n, m) for n, m in block.named_modules()
                 if n and role_of(f"x.{n}") == "norm" and not any(c.startswith(f"{n}.") for c in covered)
                 and list(m.parameters(recurse=False)) and all(p.shape == (h,) for p in m.parameters(recurse=False))]
    kind = "layer" if any(getattr(m, "bias", None) is not None for _, m in norm_mods) else "rms"
    for n, m in norm_mods:
        covered |= {f"{n}.{p}" for p, _ in m.named_parameters(recurse=False)}
    return LayerSpec(attention=attention, mlp=mlp, norms=len(norm_mods)), covered, kind


def read_generic(data: dict[str, Any], name: str = "model", where: str = "config.json") -> ModelArch:
    """The architecture of a config.json mapping as transformers builds it; the parameter count is exact."""
    import torch

    model = build_meta_model(data, where=where)
    config = model.config
    reader = transformers_reader()
    real = {n: tuple(p.shape) for n, p in model.named_parameters()}
    total = sum(_numel(s) for s in real.values())
    stack = _layer_stack(model)
    if stack is None:
        raise IngestError(f"{where}: {type(model).__name__} has no stack of attention layers sizeup can price "
                          f"({total:,} parameters); trace it with `sizeup flops` instead")
    stack_path, layers_module = stack
    causal = _generates(config, data)
    h = _config_int(config, "hidden_size", "n_embd", "d_model")
    if h is None:
        raise IngestError(f"{where}: the {config.model_type} config names no hidden size")
    layers, kinds, covered = [], set(), set()
    try:
        for i, block in enumerate(layers_module):
            spec, names, kind = _block_spec(block, h, config, causal, i)
            layers.append(spec)
            kinds.add(kind)
            covered |= {f"{stack_path}.{i}.{n}" for n in names}
    except _Unmapped as e:
        raise IngestError(f"{where}: the {config.model_type} layers do not map onto sizeup's layers ({e}); "
                          f"{total:,} parameters; trace it with `sizeup flops` instead") from None
    inputs = model.get_input_embeddings()
    outputs = model.get_output_embeddings()
    if not isinstance(getattr(inputs, "weight", None), torch.Tensor) or inputs.weight.dim() != 2:
        raise IngestError(f"{where}: {type(model).__name__} has no token embedding ({type(inputs).__name__}); "
                          f"{total:,} parameters; trace it with `sizeup flops` instead")
    emb_name = next(n for n, p in model.named_parameters() if p is inputs.weight)
    covered.add(emb_name)
    vocab = inputs.weight.shape[0]
    tied = outputs is not None and outputs.weight is inputs.weight
    if outputs is not None and not tied:
        head_name = next(n for n, p in model.named_parameters() if p is outputs.weight)
        covered.add(head_name)
        if getattr(outputs, "bias", None) is not None:
            raise IngestError(f"{where}: the LM head has a bias, which sizeup's layers do not hold")
    encoder = not causal
    norm = kinds.pop() if len(kinds) == 1 else "layer"
    arch = ModelArch(name=name, model_type=config.model_type, hidden=h, vocab=vocab, layers=tuple(layers), norm=norm,
                     tie_embeddings=tied or outputs is None, lm_head=outputs is not None, encoder=encoder,
                     max_context=_config_int(config, "max_position_embeddings", "n_positions") or 0)
    # the norms the arch holds outside its layers (final norm, or an encoder's embedding norm), matched by size
    outer_norms = [t for t in arch.tensors() if t.layer is None and t.role == "norm"]
    rest = [n for n in real if n not in covered]
    for t in outer_norms:
        match = next((n for n in rest if role_of(n) == "norm" and real[n] == t.shape
                      and n.rsplit(".", 1)[-1] == t.name.rsplit(".", 1)[-1]), None)
        if match is None:
            raise IngestError(f"{where}: no {t.name.rsplit('.', 1)[-1]} of a norm outside the layers "
                              f"({type(model).__name__})")
        rest.remove(match)
    extras = tuple(WeightTensor(n, real[n], role_of(n), _layer_index(n, stack_path)) for n in rest)
    assumptions = [f"read by {reader}: {type(model).__name__}, {total:,} parameters"]
    if extras:
        by_role: dict[str, int] = {}
        for t in extras:
            by_role[t.role] = by_role.get(t.role, 0) + t.numel
        assumptions.append("parameters outside the mapped layers are counted in memory, not in FLOPs: "
                           + ", ".join(f"{role} {count:,}" for role, count in sorted(by_role.items())))
    arch = ModelArch(name=name, model_type=config.model_type, hidden=h, vocab=vocab, layers=tuple(layers), norm=norm,
                     tie_embeddings=arch.tie_embeddings, lm_head=arch.lm_head, encoder=encoder,
                     max_context=arch.max_context, extra_tensors=extras, assumptions=tuple(assumptions),
                     reader=reader)
    if arch.params != total:
        raise IngestError(f"{where}: mapping {type(model).__name__} onto sizeup's layers gives {arch.params:,} "
                          f"parameters, transformers builds {total:,}: trace it with `sizeup flops` instead")
    return arch


def _layer_index(name: str, stack_path: str) -> int | None:
    prefix = f"{stack_path}."
    if name.startswith(prefix):
        head = name[len(prefix):].split(".", 1)[0]
        return int(head) if head.isdigit() else None
    return None


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def generic_ledger(data: dict[str, Any], *, batch: int = 1, tokens: int = 128, dtype: str = "bf16",
                   where: str = "config.json") -> Any:
    """One forward step of the model transformers builds from `data`, traced on fake tensors: exact FLOPs,
    bytes and activations for `batch` sequences of `tokens` token ids."""
    from sizeup.ingest.torch_trace import trace_module
    from sizeup.ingest.trace_inputs import InputSpec

    config = _config(data, where)
    cls = _model_class(config, data, None)

    def factory() -> Any:
        return cls(config)

    ledger = trace_module(factory, [InputSpec(shape=(batch, tokens), dtype="int64", name="input_ids")], dtype=dtype,
                          name=f"{config.model_type} ({cls.__name__})")
    ledger.assumptions.append(f"traced from {transformers_reader().replace('(meta device)', '(fake tensors)')}")
    return ledger
