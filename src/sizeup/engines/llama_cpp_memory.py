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
