"""What llama.cpp holds in device memory beyond the weights and the KV cache, as its loader and graph allocator size
it (engines/llama_cpp.py `memory`; read in github.com/ggml-org/llama.cpp at the build the profile names, 2026-12-05):

- the compute buffer: ggml's graph allocator reserves, once at load, the peak of the graph of one physical batch of
  `n_ubatch` tokens with every row an output (src/llama-context.cpp reserves the prompt graph with n_outputs =
  n_tokens), whatever the request later sends. Activations are f32. The allocator reuses a tensor's memory once its
  last reader has run, so the buffer is the widest stage of the graph, not their sum: the logits (n_ubatch x
  vocab, beside the final normed hidden state), the feed-forward (the residual and its normed copy beside the gate,
  up and gated products), or the attention (the residual and normed input, q/k/v and, without flash attention, one
  layer's f32 scores n_ubatch x n_kv x heads and the mask over the whole cache). Checked against published buffers:
  Qwen2.5-7B-class at n_ctx 2048, 304 MiB (the logits stage, 304.0 here); a Mistral-7B-class model without flash
  attention, 164 MiB at n_ctx 2048 and 2144 MiB at 32768 (160 and 2140 here); Llama-3-8B at n_ctx 8192 without flash
  attention, 560 MiB (556 here) (data/engines/llama.cpp.yaml `compute_buffer_bytes` cites them);
- flash attention: `-fa auto` is the default from build b6343 (2025-08-31: the flag became on/off/auto, on where the
  backend has the kernel), off before; with it no score matrix is materialised;
- the input layer (the token embedding) stays in CPU RAM: src/llama-model.cpp assigns the input layer to the CPU
  ("there is very little benefit to offloading the input layer"); a model with tied embeddings still holds its
  output copy on the device (the loader duplicates the tensor for the output layer).
"""

from __future__ import annotations

from sizeup.formats import tensor_bytes_map

__all__ = ["FLASH_AUTO_FROM", "flash_attention_default", "compute_buffer", "input_layer_bytes"]

FLASH_AUTO_FROM = "2025-08-31"
"""The first build whose default flash attention is `auto` (b6343; mudler/LocalAI PR 6168 and WasmEdge PR 4343
adapted to it that day: "flash_attn changed from bool to on/off/auto")."""
F32 = 4
MASK_BYTES = {True: 2, False: 4}
"""The KQ mask per element: f16 where flash attention reads it, f32 on the soft_max path (the 132 B per context
token and batch token of the published Mistral-7B buffers: 32 heads x 4 B of scores + 4 B of mask)."""


def flash_attention_default(build_date: str | None) -> bool:
    """Whether a build of `build_date` (None: the current one) runs flash attention by default on a GPU backend."""
    return build_date is None or build_date >= FLASH_AUTO_FROM


def compute_buffer(arch, ubatch: int, cache_tokens: int, flash: bool) -> tuple[int, str]:
    """(bytes, which stage sets them) of the compute buffer for one physical batch of min(ubatch, cache) tokens
    against a KV cache of `cache_tokens` cells."""
    t = max(1, min(ubatch, cache_tokens))
    h = arch.hidden
    stages = {"logits": t * (arch.vocab + h) * F32}
    ffn = attention = 0
    for layer in arch.layers:
        m, a = layer.mlp, layer.attention
        inter = (m.top_k * m.intermediate + m.shared_intermediate * m.shared_experts) if m.is_moe else m.intermediate
        ffn = max(ffn, t * (2 * h + 3 * inter) * F32)
        if a.head_dim:
            kv = min(cache_tokens, a.window + t) if a.window else cache_tokens
            qkv = t * (a.heads * a.head_dim + a.kv_heads * (a.head_dim + a.v_head_dim)) * F32
            scores = 0 if flash else t * kv * a.heads * F32
            attention = max(attention, 2 * t * h * F32 + qkv + scores + t * kv * MASK_BYTES[flash])
    stages["feed-forward"], stages["attention"] = ffn, attention
    stage = max(stages, key=stages.get)
    return stages[stage], (f"llama.cpp compute buffer {stages[stage] / 2**20:,.0f} MiB: the graph of one physical "
                           f"batch of {t} tokens (n_ubatch), f32, its widest stage the {stage}"
                           + ("" if flash else f" (no flash attention: one layer's scores over the "
                                                f"{cache_tokens:,}-token cache)"))


def input_layer_bytes(arch, weights) -> int:
    """Bytes of the token embedding llama.cpp keeps in CPU RAM and off the device; 0 where the embedding is tied to
    the output (its copy for the output layer stays on the device)."""
    if arch.tie_embeddings:
        return 0
    sizes = tensor_bytes_map(arch, weights)
    return sum(sizes[t.name] for t in arch.tensors() if t.role == "embedding" and t.layer is None)


GIB_MIB = 1 << 20
FIT_FROM = "2025-12-15"
"""`--fit on` is llama-server's and llama-cli's default from ggml-org/llama.cpp PR 16653 ("automatically set
parameters not set by the user in such a way that maximizes GPU utilization", merged by 2025-12-15: PR 18070 of that
day fixes its early stop); llama-bench keeps it off (`-fitt`, default off)."""


def _layer_bytes(arch, weights) -> tuple[list[int], int]:
    """(bytes of each repeating layer, bytes of the output layer and final norm) in `weights`' format."""
    sizes = tensor_bytes_map(arch, weights)
    per_layer, output = [0] * arch.num_layers, 0
    for t in arch.tensors():
        if t.layer is not None and t.layer < arch.num_layers:
            per_layer[t.layer] += sizes[t.name]
        elif t.role in ("lm_head", "norm") or (t.role == "embedding" and arch.tie_embeddings):
            output += sizes[t.name]
    return per_layer, output


def _kv_per_token(arch, kv_bytes: float) -> list[float]:
    return [arch.kv_elements_per_token(layer) * kv_bytes if layer.attention.head_dim else 0.0 for layer in arch.layers]


def fit_params(arch, weights, *, free: float, margin: float, min_ctx: int, asked_ctx: int, ubatch: int,
               flash: bool, kv_bytes: float = 2.0) -> tuple[int, int, str]:
    """llama.cpp's `--fit on` (common/fit.cpp common_params_fit_impl, read at the profile's build) for one device of
    `free` bytes: (n_ctx, repeating layers on the device, the sentence). With n_ctx left to it, the model's training
    context if the whole model, its cache and compute buffer leave `margin` free; else the context interpolated down
    to no less than `min_ctx` (rounded down to 256); if even that does not leave the margin, the context stays at
    the minimum and layers are filled from the last one down until the device's use meets free - margin, the rest
    on the CPU. `asked_ctx` (the request's own context) is never cut."""
    per_layer, output = _layer_bytes(arch, weights)
    kv_tok = _kv_per_token(arch, kv_bytes)
    n = arch.num_layers
    target = free - margin

    def used(ctx: int, layers: int) -> float:
        held = sum(per_layer[n - layers:]) + (output if layers == n else 0)
        kv = sum(kv_tok[n - layers:]) * ctx
        return held + kv + compute_buffer(arch, ubatch, ctx, flash)[0]

    ctx_max = max(arch.max_context or asked_ctx, asked_ctx)
    ctx_min = max(min(min_ctx, ctx_max), asked_ctx)
    if used(ctx_max, n) <= target:
        ctx, why = ctx_max, f"the model's {ctx_max:,}-token context leaves the {margin / GIB_MIB:,.0f} MiB margin"
    elif used(ctx_min, n) <= target:
        hi, lo = used(ctx_max, n), used(ctx_min, n)
        ctx = ctx_min + int((ctx_max - ctx_min) * (target - lo) / (hi - lo))
        ctx = max(ctx - ctx % 256, ctx_min)
        why = f"the context cut from {ctx_max:,} to {ctx:,} tokens to leave the {margin / GIB_MIB:,.0f} MiB margin"
    else:
        ctx = ctx_min
        layers = next((k for k in range(n, -1, -1) if used(ctx, k) <= target), 0)
        return ctx, layers, (
            f"llama.cpp --fit: {ctx:,}-token context (its minimum {min_ctx:,}), {layers} of {n} layers on the GPU and "
            f"{n - layers} on the CPU, filled from the last layer down to leave {margin / GIB_MIB:,.0f} MiB of the "
            f"{free / 2**30:.2f} GiB free (common/fit.cpp); --engine-opt fit=0 for llama-bench's all-on-GPU")
    return ctx, n, f"llama.cpp --fit: {why}; every layer on the GPU (common/fit.cpp)"
