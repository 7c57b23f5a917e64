"""The analytic ledger of a transformer step, from its `ModelArch`: the same ops a traced run records
(scopes follow Hugging Face module names: "model.layers.3.self_attn.q_proj"), with FLOPs by the
conventions of `sizeup.ops`, and the bytes of fused inference kernels (weights in their stored format,
the KV cache read once per step, attention scores never written).

A step processes `new_tokens` tokens for each of `batch` sequences that already hold
`context - new_tokens` tokens of cache: prefill is `new_tokens == context`, a decode step is
`new_tokens == 1`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from sizeup.errors import ConfigError
from sizeup.formats import WeightFormat, get_format, tensor_bytes, tensor_bytes_map
from sizeup.ingest.arch import LayerSpec, ModelArch
from sizeup.ledger import Ledger, OpKind, OpRecord, Phase
from sizeup.ops.attention import SOFTMAX_FLOPS_PER_ELEMENT
from sizeup.ops.elementwise import FLOPS_PER_ELEMENT

__all__ = ["Step", "KV_BYTES_PER_ELEMENT", "transformer_ledger", "step_ledger", "attention_pairs"]

# Cache storage per element: fp16/bf16 2 bytes; fp8 1; llama.cpp q8_0 / q4_0 blocks of 32 (34 / 18 bytes).
KV_BYTES_PER_ELEMENT = {"fp16": 2.0, "bf16": 2.0, "f16": 2.0, "fp32": 4.0, "fp8": 1.0, "int8": 1.0,
                        "q8_0": 34 / 32, "q4_0": 18 / 32}
DEQUANT_FLOPS_PER_WEIGHT = 2
"""Unpacking a quantized weight: multiply by its group scale, subtract its zero point (vector work)."""
_ACT_FLOPS = {name: per for per, names in FLOPS_PER_ELEMENT.items() for name in names}


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    batch: int
    new_tokens: int
    context: int
    causal_blocks: str = "triangle"
    """"triangle": a causal kernel computes the lower triangle only; "full": the whole rectangle (the
    convention of traced unfused attention)."""
    logits: str = "last"
    """"last": the LM head runs on the last token of each sequence (serving engines); "all"."""
    absorb_mla: bool | None = None
    """MLA: attend in the latent space (decode kernels); None: only for single-token steps."""

    def __post_init__(self) -> None:
        if self.batch < 1 or self.new_tokens < 1 or self.context < self.new_tokens:
            raise ConfigError(f"step batch={self.batch}, new_tokens={self.new_tokens}, context={self.context}: "
                              f"expected batch >= 1 and 1 <= new_tokens <= context")

    @property
    def tokens(self) -> int:
        return self.batch * self.new_tokens


def attention_pairs(new: int, context: int, window: int | None, causal: bool, triangle: bool) -> int:
    """Query-key pairs one sequence computes: each new token j (1-based) sees the `context - new`
    cached tokens plus j new ones (causal), capped at the sliding window."""
    prefix = context - new
    if not causal:
        return new * min(context, window or context)
    if not triangle:
        return new * (min(context, window) if window else context)
    cap = window or context + 1
    # sum_{j=1..new} min(prefix + j, cap)
    below = max(0, min(new, cap - prefix))  # tokens whose count prefix + j stays under the cap
    first = below * prefix + below * (below + 1) // 2
    return first + (new - below) * cap


class _Builder:
    def __init__(self, arch: ModelArch, step: Step, fmt: WeightFormat, kv_bytes: float, act_dtype: str,
                 tp: int, ranks: int = 1) -> None:
        self.arch, self.step, self.fmt, self.kv_bytes, self.tp = arch, step, fmt, kv_bytes, tp
        # attention data parallelism over `ranks` GPUs: all but the routed experts run on one rank's own sequences
        # with their weights whole (no tensor-parallel split, no all-reduce); the experts see every rank's tokens,
        # split `tp` ways, between an all-gather and a reduce-scatter of the hidden states
        self.expert_tp, self.expert_tokens = tp, step.tokens
        if ranks > 1:
            self.step, self.tp = replace(step, batch=-(-step.batch // ranks)), 1
        self.act_dtype = act_dtype
        self.a = 4 if act_dtype == "fp32" else 2
        self.ledger = Ledger(name=arch.name)
        self.weights = {t.name: t for t in arch.tensors()}
        # packed weights are unpacked once per matmul: a scale multiply and a zero-point subtract per weight
        self.dequant = DEQUANT_FLOPS_PER_WEIGHT if fmt.family in ("gguf", "gptq", "awq", "nf4") and \
            fmt.gguf_base not in ("F16", "BF16", "F32") else 0
        self.sizes = tensor_bytes_map(arch, fmt)

    def add(self, op: str, kind: OpKind, scope: str, flops: int, read: int, written: int, matmul: int = 0,
            dtype: str | None = None, notes: tuple[str, ...] = (), weights: int = 0) -> None:
        self.ledger.add(OpRecord(op=op, kind=kind, scope=scope, phase=Phase.FORWARD, flops=int(flops),
                                 matmul_flops=int(matmul), bytes_read=int(read), bytes_written=int(written),
                                 weight_bytes=int(weights), dtype=dtype or self.act_dtype, notes=notes))

    def wbytes(self, name: str, shard: bool = True) -> int:
        size = self.sizes.get(name)
        if size is None:
            return 0
        return size // (self.tp if shard else 1)

    def linear(self, scope: str, weight: str, tokens: int, n_in: int, n_out: int, bias: bool,
               shard: str = "column") -> None:
        """y = x W^T (+ b); tensor parallel splits n_out ("column"), n_in ("row") or nothing ("none")."""
        tp = self.tp if shard != "none" else 1
        n_in_local = n_in // tp if shard == "row" else n_in
        n_out_local = n_out // tp if shard == "column" else n_out
        product = 2 * tokens * n_in_local * n_out_local
        flops = product + (tokens * n_out_local if bias else 0) + self.dequant * n_in_local * n_out_local
        bias_bytes = self.wbytes(weight.replace(".weight", ".bias"), shard != "none")
        self.add("linear", OpKind.MATMUL, scope, flops,
                 self.wbytes(weight, shard != "none") + bias_bytes + tokens * n_in_local * self.a,
                 tokens * n_out_local * self.a,
                 matmul=product, dtype=self.fmt.compute_dtype if self.fmt.family != "plain" else self.act_dtype)

    def elementwise(self, op: str, scope: str, elements: int, per: int, inputs: int = 1) -> None:
        self.add(op, OpKind.ELEMENTWISE, scope, per * elements, inputs * elements * self.a, elements * self.a)

    def norm(self, scope: str, tokens: int, width: int, weight: str) -> None:
        per = 4 if self.arch.norm == "rms" else 8
        self.add("rms_norm" if self.arch.norm == "rms" else "layer_norm", OpKind.NORM, scope, per * tokens * width,
                 tokens * width * self.a + self.wbytes(weight, shard=False) * 2, tokens * width * self.a)

    def all_reduce(self, scope: str, tokens: int) -> None:
        if self.tp > 1:
            size = tokens * self.arch.hidden * self.a
            self.add("all_reduce", OpKind.COMM, scope, 0, size, size)

    # ---- blocks ----------------------------------------------------------------------------
    def embeddings(self) -> None:
        arch, t = self.arch, self.step.tokens
        h = arch.hidden
        if arch.image:
            size, patch, channels = arch.image
            patches = (size // patch) ** 2
            product = 2 * self.step.batch * patches * channels * patch * patch * h
            self.add("convolution", OpKind.CONV, "embeddings.patch_embeddings", product + self.step.batch * patches * h,
                     self.wbytes("embeddings.patch_embeddings.weight", False)
                     + self.step.batch * channels * size * size * self.a, self.step.batch * patches * h * self.a,
                     matmul=product)
            self.elementwise("add", "embeddings", t * h, 1, inputs=2)
            return
        emb = self.weights["embed_tokens.weight"]
        row_bytes = tensor_bytes(emb, arch, self.fmt) // arch.vocab
        self.add("embedding", OpKind.EMBED, "model.embed_tokens", 0, t * row_bytes + t * 8, t * h * self.a)
        if arch.embed_scale:
            self.elementwise("mul", "model", t * h, 1)
        if arch.positions:
            self.add("embedding", OpKind.EMBED, "model.embed_positions", 0, t * h * 2 + t * 8, t * h * self.a)
            self.elementwise("add", "model", t * h, 1, inputs=2)
        if arch.type_vocab:
            self.add("embedding", OpKind.EMBED, "model.token_type_embeddings", 0, t * h * 2 + t * 8, t * h * self.a)
            self.elementwise("add", "model", t * h, 1, inputs=2)
        if arch.embed_dim:  # OPT: embeddings narrower than the hidden size, projected in
            self.linear("model.project_in", "project_in.weight", t, arch.embed_dim, h, False, shard="none")
        if arch.encoder or arch.embed_norm:
            self.norm("model.embeddings.LayerNorm", t, h, "embeddings.LayerNorm.weight")

    def attention(self, i: int, layer: LayerSpec) -> None:
        arch, step, t, a = self.arch, self.step, self.step.tokens, layer.attention
        h, tp, p = arch.hidden, self.tp, f"model.layers.{i}.self_attn"
        w = f"layers.{i}.attn"
        if a.heads % tp or a.kv_heads % tp and a.kv_heads >= tp:
            raise ConfigError(f"tensor parallel {tp} does not divide {a.heads} attention heads / {a.kv_heads} KV heads")
        heads, kv_heads = a.heads // tp, max(a.kv_heads // tp, 1)
        if a.mla is not None:
            self._mla(i, layer, heads)
        else:
            self.linear(f"{p}.q_proj", f"{w}.q_proj.weight", t, h, a.heads * a.head_dim * (2 if a.output_gate else 1),
                        a.qkv_bias)
            self.linear(f"{p}.k_proj", f"{w}.k_proj.weight", t, h, a.kv_heads * a.head_dim, a.qkv_bias)
            self.linear(f"{p}.v_proj", f"{w}.v_proj.weight", t, h, a.kv_heads * a.v_head_dim, a.qkv_bias)
            if a.qk_norm:
                self.add("rms_norm", OpKind.NORM, f"{p}.q_norm", 4 * t * heads * a.head_dim,
                         t * heads * a.head_dim * self.a, t * heads * a.head_dim * self.a)
                self.add("rms_norm", OpKind.NORM, f"{p}.k_norm", 4 * t * kv_heads * a.head_dim,
                         t * kv_heads * a.head_dim * self.a, t * kv_heads * a.head_dim * self.a)
            rotary = a.head_dim if a.rotary_dim is None else a.rotary_dim
            if not arch.positions and not arch.image and not a.alibi and rotary:  # rotary on q and k
                rotated = t * (heads + kv_heads) * rotary
                self.add("rotary_embedding", OpKind.ELEMENTWISE, p, 7 * rotated // 2, 2 * rotated * self.a,
                         rotated * self.a)
            pairs = step.batch * attention_pairs(step.new_tokens, step.context, a.window, a.causal,
                                                 step.causal_blocks == "triangle")
            cached = step.batch * min(step.context, a.window or step.context)
            product = 2 * pairs * heads * (a.head_dim + a.v_head_dim)
            kv_read = int(cached * kv_heads * (a.head_dim + a.v_head_dim) * self.kv_bytes)
            notes = ("causal: the lower triangle a flash kernel computes",) if (
                a.causal and step.causal_blocks == "triangle" and step.new_tokens > 1) else ()
            if a.window:
                notes += (f"sliding window of {a.window} tokens",)
            # ALiBi adds its bias to each score; a sink adds one logit per query row to the softmax
            extra = pairs * heads if a.alibi else 0
            if a.alibi:
                notes += ("ALiBi: a linear bias added to each score",)
            # a decode step's attention streams the KV cache (its `weights`: price/rates.py prices them at the
            # decode attention kernel's own share of the bandwidth, Efficiency.attention_memory)
            self.add("attention", OpKind.ATTENTION, p, product + SOFTMAX_FLOPS_PER_ELEMENT * pairs * heads + extra,
                     t * heads * a.head_dim * self.a + kv_read, t * heads * a.v_head_dim * self.a, matmul=product,
                     notes=notes, weights=kv_read if step.new_tokens == 1 else 0)
            if not arch.encoder:
                new_kv = int(t * kv_heads * (a.head_dim + a.v_head_dim) * self.kv_bytes)
                self.add("kv_cache_write", OpKind.COPY, p, 0, t * kv_heads * (a.head_dim + a.v_head_dim) * self.a,
                         new_kv)
        if a.output_gate:  # attention output × sigmoid(gate): the sigmoid (4) and the multiply (1) per element
            self.elementwise("gate", f"{p}.output_gate", t * heads * a.v_head_dim, 5, inputs=2)
        self.linear(f"{p}.o_proj", f"{w}.o_proj.weight", t, a.heads * a.v_head_dim, h, a.o_bias, shard="row")
        self.all_reduce(p, t)

    def _mla(self, i: int, layer: LayerSpec, heads: int) -> None:
        arch, step, t, a = self.arch, self.step, self.step.tokens, layer.attention
        m, h, p, w = a.mla, arch.hidden, f"model.layers.{i}.self_attn", f"layers.{i}.attn"
        if m.q_lora_rank:
            self.linear(f"{p}.q_a_proj", f"{w}.q_a_proj.weight", t, h, m.q_lora_rank, False, shard="none")
            self.add("rms_norm", OpKind.NORM, f"{p}.q_a_layernorm", 4 * t * m.q_lora_rank, t * m.q_lora_rank * self.a,
                     t * m.q_lora_rank * self.a)
            self.linear(f"{p}.q_b_proj", f"{w}.q_b_proj.weight", t, m.q_lora_rank, a.heads * a.head_dim, False)
        else:
            self.linear(f"{p}.q_proj", f"{w}.q_proj.weight", t, h, a.heads * a.head_dim, False)
        latent = m.kv_lora_rank + m.qk_rope_head_dim
        self.linear(f"{p}.kv_a_proj_with_mqa", f"{w}.kv_a_proj_with_mqa.weight", t, h, latent, False, shard="none")
        self.add("rms_norm", OpKind.NORM, f"{p}.kv_a_layernorm", 4 * t * m.kv_lora_rank, t * m.kv_lora_rank * self.a,
                 t * m.kv_lora_rank * self.a)
        rotated = t * (heads + 1) * m.qk_rope_head_dim
        self.add("rotary_embedding", OpKind.ELEMENTWISE, p, 7 * rotated // 2, 2 * rotated * self.a, rotated * self.a)
        pairs = step.batch * attention_pairs(step.new_tokens, step.context, None, True,
                                             step.causal_blocks == "triangle")
        if m.expanded_v_dim:
            self._mla_expanded(p, w, layer, heads, pairs)
            return
        self.add("kv_cache_write", OpKind.COPY, p, 0, t * latent * self.a, int(t * latent * self.kv_bytes))
        cached = int(step.batch * step.context * latent * self.kv_bytes)
        absorb = step.new_tokens == 1 if step.absorb_mla is None else step.absorb_mla
        kv_b = self.wbytes(f"{w}.kv_b_proj.weight")
        if absorb:
            # fold W_UK into the query and W_UV into the output: attention runs over the shared latent
            fold = 2 * t * heads * m.kv_lora_rank * (m.qk_nope_head_dim + m.v_head_dim)
            self.add("mla_absorb", OpKind.MATMUL, f"{p}.kv_b_proj", fold, kv_b + t * heads * a.head_dim * self.a,
                     t * heads * (m.kv_lora_rank + m.v_head_dim) * self.a, matmul=fold,
                     dtype=self.fmt.compute_dtype if self.fmt.family != "plain" else self.act_dtype)
            product = 2 * pairs * heads * (latent + m.kv_lora_rank)
            self.add("attention", OpKind.ATTENTION, p, product + SOFTMAX_FLOPS_PER_ELEMENT * pairs * heads,
                     t * heads * latent * self.a + cached, t * heads * m.kv_lora_rank * self.a, matmul=product,
                     notes=("MLA decode in the latent space (weight absorption): the cache is read once for all heads",))
        else:
            ctx = step.batch * step.context
            self.linear(f"{p}.kv_b_proj", f"{w}.kv_b_proj.weight", ctx, m.kv_lora_rank,
                        a.heads * (m.qk_nope_head_dim + m.v_head_dim), False)
            product = 2 * pairs * heads * (a.head_dim + a.v_head_dim)
            self.add("attention", OpKind.ATTENTION, p, product + SOFTMAX_FLOPS_PER_ELEMENT * pairs * heads,
                     t * heads * a.head_dim * self.a + ctx * heads * (a.head_dim + a.v_head_dim) * self.a,
                     t * heads * a.v_head_dim * self.a, matmul=product,
                     notes=("MLA prefill: keys and values decompressed from the latent",))

    def _mla_expanded(self, p: str, w: str, layer: LayerSpec, heads: int, pairs: int) -> None:
        """MLA run as multi-head attention over a per-head cache (`MLASpec.expanded_v_dim`): the new tokens' keys and
        values decompressed once (kv_b_proj), written per head with values padded, and every step's attention reading
        the heads' cached keys and values as a plain multi-head kernel does."""
        step, t, a = self.step, self.step.tokens, layer.attention
        m, width = a.mla, a.head_dim + a.mla.expanded_v_dim
        self.linear(f"{p}.kv_b_proj", f"{w}.kv_b_proj.weight", t, m.kv_lora_rank,
                    a.heads * (m.qk_nope_head_dim + m.v_head_dim), False)
        self.add("kv_cache_write", OpKind.COPY, p, 0, t * heads * width * self.a, int(t * heads * width * self.kv_bytes))
        product = 2 * pairs * heads * width
        self.add("attention", OpKind.ATTENTION, p, product + SOFTMAX_FLOPS_PER_ELEMENT * pairs * heads,
                 t * heads * a.head_dim * self.a + int(step.batch * step.context * heads * width * self.kv_bytes),
                 t * heads * m.expanded_v_dim * self.a, matmul=product,
                 notes=("MLA as multi-head attention: each head's keys and values read from the cache",))

    def mlp(self, i: int, layer: LayerSpec) -> None:
        t, m, h = self.step.tokens, layer.mlp, self.arch.hidden
        p, w = f"model.layers.{i}.mlp", f"layers.{i}.mlp"
        act = 9 if m.act == "gelu_tanh" else _ACT_FLOPS.get(m.act, 5)
        if not m.is_moe:
            self._dense_mlp(p, w, t, m.intermediate, m.gated, m.bias, act)
            self.all_reduce(p, t)
            return
        self.linear(f"{p}.gate", f"{w}.gate.weight", t, h, m.experts, m.router_linear_bias, shard="none")
        self.add("topk_softmax", OpKind.ELEMENTWISE, f"{p}.gate", SOFTMAX_FLOPS_PER_ELEMENT * t * m.experts,
                 t * m.experts * self.a, t * m.top_k * (self.a + 4))
        t_all, tp = self.expert_tokens, self.expert_tp  # every rank's tokens under attention data parallelism
        gathered = tp > 1 and tp != self.tp
        if gathered:
            size = t_all * h * self.a
            self.add("all_gather", OpKind.COMM, f"{p}.experts", 0, size // tp, size)
        routed = t_all * m.top_k
        touched = m.experts * (1 - (1 - m.top_k / m.experts) ** t_all)  # expected distinct experts, uniform routing
        inter = m.intermediate // tp
        for proj, n_in, n_out in (("gate_proj", h, inter), ("up_proj", h, inter), ("down_proj", inter, h)):
            full = tensor_bytes(self.weights[f"{w}.experts.{proj}"], self.arch, self.fmt)
            weight_read = int(full / tp * touched / m.experts)
            product = 2 * routed * n_in * n_out
            dequant = int(self.dequant * n_in * n_out * touched)
            bias = routed * n_out if m.bias else 0
            self.add("grouped_linear", OpKind.MATMUL, f"{p}.experts.{proj}", product + dequant + bias,
                     weight_read + routed * n_in * self.a, routed * n_out * self.a, matmul=product,
                     dtype=self.fmt.compute_dtype if self.fmt.family != "plain" else self.act_dtype,
                     notes=(f"MoE: {touched:.1f} of {m.experts} experts' weights read (uniform routing)",),
                     weights=weight_read)
            if proj == "up_proj":
                self.add("silu_mul", OpKind.ELEMENTWISE, f"{p}.experts", (act + 1) * routed * inter,
                         2 * routed * inter * self.a, routed * inter * self.a)
        self.add("moe_combine", OpKind.ELEMENTWISE, f"{p}.experts", 2 * routed * h, routed * h * self.a,
                 t_all * h * self.a)
        if gathered:
            size = t_all * h * self.a
            self.add("reduce_scatter", OpKind.COMM, f"{p}.experts", 0, size, size // tp)
        if m.shared_experts:
            self._dense_mlp(f"{p}.shared_experts", f"{w}.shared_experts", t, m.shared_intermediate * m.shared_experts,
                            True, False, act)
            self.elementwise("add", p, t * h, 1, inputs=2)
        if m.shared_gate:
            self.linear(f"{p}.shared_expert_gate", f"{w}.shared_expert_gate.weight", t, h, 1, False, shard="none")
        self.all_reduce(p, t)

    def _dense_mlp(self, p: str, w: str, t: int, inter: int, gated: bool, bias: bool, act: int) -> None:
        h = self.arch.hidden
        local = inter // self.tp
        if gated:
            self.linear(f"{p}.gate_proj", f"{w}.gate_proj.weight", t, h, inter, bias)
        self.linear(f"{p}.up_proj", f"{w}.up_proj.weight", t, h, inter, bias)
        if gated:
            self.add("act_mul", OpKind.ELEMENTWISE, f"{p}.act_fn", (act + 1) * t * local, 2 * t * local * self.a,
                     t * local * self.a)
        else:
            self.elementwise("activation", f"{p}.act_fn", t * local, act)
        self.linear(f"{p}.down_proj", f"{w}.down_proj.weight", t, inter, h, bias, shard="row")

    def layer(self, i: int, layer: LayerSpec) -> None:
        t, h, p = self.step.tokens, self.arch.hidden, f"model.layers.{i}"
        if layer.ssm is not None:  # Mamba: a norm, the state-space mixer, the residual (a hybrid: then its MLP)
            self.norm(f"{p}.norm", t, h, f"layers.{i}.norm0.weight")
            from sizeup.ingest.ssm_ops import ssm_mixer  # state-space layers only

            ssm_mixer(self, i, layer)
            self.elementwise("add", p, t * h, 1, inputs=2)
            if layer.mlp.intermediate:
                self.norm(f"{p}.post_attention_layernorm", t, h, f"layers.{i}.norm1.weight")
                self.mlp(i, layer)
                self.elementwise("add", p, t * h, 1, inputs=2)
            return
        if layer.parallel:  # attention and MLP off one input (1 shared norm, or one per branch), one residual
            self.norm(f"{p}.input_layernorm", t, h, f"layers.{i}.norm0.weight")
            if layer.norms == 2:
                self.norm(f"{p}.post_attention_layernorm", t, h, f"layers.{i}.norm1.weight")
            self.attention(i, layer)
            self.mlp(i, layer)
            self.elementwise("add", p, t * h, 2, inputs=3)
            return
        post_norm = self.arch.model_type == "bert"
        if not post_norm:
            self.norm(f"{p}.input_layernorm", t, h, f"layers.{i}.norm0.weight")
        self.attention(i, layer)
        if self.arch.cross_source:
            from sizeup.ingest.cross_attention_ops import cross_attention  # encoder-decoders only

            cross_attention(self, i, layer)
        if layer.norms == 4:
            self.norm(f"{p}.post_attention_layernorm", t, h, f"layers.{i}.norm1.weight")
        self.elementwise("add", p, t * h, 1, inputs=2)
        name = "pre_feedforward_layernorm" if layer.norms == 4 else "post_attention_layernorm"
        self.norm(f"{p}.{name}", t, h, f"layers.{i}.norm{2 if layer.norms == 4 else 1}.weight")
        self.mlp(i, layer)
        if layer.norms == 4:
            self.norm(f"{p}.post_feedforward_layernorm", t, h, f"layers.{i}.norm3.weight")
        self.elementwise("add", p, t * h, 1, inputs=2)
        if post_norm:
            self.norm(f"{p}.output.LayerNorm", t, h, f"layers.{i}.norm0.weight")

    def head(self) -> None:
        arch, step, h = self.arch, self.step, self.arch.hidden
        t = step.tokens
        if (not arch.encoder or arch.image) and arch.final_norm:
            self.norm("model.norm", t, h, "norm.weight")
        if arch.lm_head:
            rows = step.batch if step.logits == "last" else t
            name = "embed_tokens.weight" if arch.tie_embeddings else "lm_head.weight"
            width = arch.embed_dim or h
            if arch.embed_dim:
                self.linear("model.project_out", "project_out.weight", rows, h, width, False, shard="none")
            self.linear("lm_head", name, rows, width, arch.vocab, arch.lm_head_bias)
            if self.tp > 1:
                size = rows * arch.vocab * self.a
                self.add("all_gather", OpKind.COMM, "lm_head", 0, size // self.tp, size)
        if arch.pooler:
            self.linear("pooler.dense", "pooler.dense.weight", step.batch, h, h, True, shard="none")
        if arch.classifier:
            self.linear("classifier", "classifier.weight", step.batch, h, arch.classifier, True, shard="none")


@lru_cache(maxsize=64)
def _distinct_layers(arch: ModelArch, fmt: WeightFormat) -> tuple[tuple[int, int], ...]:
    """(first layer index, repeats) per group of layers with the same spec and the same stored weight
    sizes (GGUF mixes give some layers more bits)."""
    sizes = tensor_bytes_map(arch, fmt)
    per_layer: dict[int, list[tuple[str, int]]] = {}
    for t in arch.tensors():
        if t.layer is not None:
            per_layer.setdefault(t.layer, []).append((t.name.split(".", 2)[2], sizes[t.name]))
    groups: dict[tuple, list[int]] = {}
    for i, layer in enumerate(arch.layers):
        groups.setdefault((layer, tuple(per_layer.get(i, ()))), []).append(i)
    return tuple((members[0], len(members)) for members in groups.values())


def transformer_ledger(arch: ModelArch, step: Step, *, weights: WeightFormat | str = "bf16", kv_dtype: str = "fp16",
                       act_dtype: str = "bf16", tp: int = 1, per_layer: bool = True, ranks: int = 1) -> Ledger:
    """The ledger of one forward step of `arch` (per GPU when `tp` > 1, with its all-reduces).

    `ranks` > 1: attention data parallelism over the `tp` GPUs (`ranks` == `tp`), the step's `batch` the whole
    replica's: the ledger of the busiest rank, which runs embeddings, attention, norms, dense MLPs and the LM head
    whole for its own ceil(batch / ranks) sequences, and the routed experts, split `tp` ways, for every rank's
    tokens between an all-gather and a reduce-scatter of the hidden states (workload/tensor_parallel.py prices
    them on the link).

    `per_layer=False` builds each distinct layer once and counts its repeats (scope
    "model.layers.*"): the same totals, built and priced many times faster."""
    fmt = get_format(weights) if isinstance(weights, str) else weights
    if kv_dtype not in KV_BYTES_PER_ELEMENT:
        raise ConfigError(f"unknown KV cache dtype {kv_dtype!r}: expected one of {', '.join(KV_BYTES_PER_ELEMENT)}")
    if tp < 1:
        raise ConfigError(f"tensor parallel {tp}: expected 1 or more")
    if ranks > 1 and ranks != tp:
        raise ConfigError(f"attention data parallelism over {ranks} ranks: expected as many as the {tp} GPUs")
    b = _Builder(arch, step, fmt, KV_BYTES_PER_ELEMENT[kv_dtype], act_dtype, tp, ranks)
    b.embeddings()
    if per_layer:
        for i, layer in enumerate(arch.layers):
            b.layer(i, layer)
    else:
        for i, count in _distinct_layers(arch, fmt):
            start = len(b.ledger.ops)
            b.layer(i, arch.layers[i])
            prefix = f"model.layers.{i}"
            b.ledger.ops[start:] = [replace(o, count=count, scope="model.layers.*" + o.scope[len(prefix):])
                                    for o in b.ledger.ops[start:]]
    b.head()
    ledger = b.ledger
    ledger.params_by_scope = {"": arch.params}
    ledger.assumptions.extend(arch.assumptions)
    return ledger



@lru_cache(maxsize=512)
def step_ledger(arch: ModelArch, step: Step, weights: WeightFormat, kv_dtype: str, act_dtype: str, tp: int,
                ranks: int = 1) -> Ledger:
    """`transformer_ledger(..., per_layer=False)`, built once per arguments: a ledger depends on the model, the step
    and the formats, not on the device or the engine that prices it, so a plan over many of them (or an estimate's
    batches) shares it. Shared: read it, never change it."""
    return transformer_ledger(arch, step, weights=weights, kv_dtype=kv_dtype, act_dtype=act_dtype, tp=tp,
                              per_layer=False, ranks=ranks)
