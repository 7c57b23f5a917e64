"""How many layers Ollama's scheduler puts on the GPU (engines/ollama.py `auto_gpu_layers`), read in
github.com/ollama/ollama (snapshot fb30760, history included; read 2026-12-05):

- up to v0.12.10, llm/memory.go `EstimateGPULayers` (e.g. commit 4742e12, 2025-08-05): the GPU's free memory must
  hold its `MinimumMemory` (discover/gpu.go: 457 MiB on CUDA and ROCm; discover/gpu_darwin.go: 512 MiB on Metal),
  the larger of the graph's partial- and full-offload sizes (fs/ggml/ggml.go `GraphSize`, a formula per
  architecture) and one layer kept free as a buffer (blk.0 plus its cache); layers (weights plus their KV cache,
  f16 at num_ctx x num_parallel tokens) are then taken from the last one down while the next fits, the output layer
  (output_norm + output, or the tied token_embd) last;
- from v0.12.11 (commit f560bd0, "Use Ollama engine memory layouts for both old and new engines"), llm/server.go
  `buildLayout` / `assignLayers` / `greedyFit`: free memory less the minimum and the graph the runner measured, then
  the same greedy fill from the last layer down, the output layer dropped first when not everything fits.

sizeup prices the graph by the GraphSize formula (Ollama's "llama" branch; its fallback `gqa x kv / 6` for
architectures without a branch of their own), also for the releases that measure it, and takes the device's usable
memory (hardware/usable.py) as the free memory Ollama reads. From 2026-05-29 (commit 9db4bdb) Ollama hands GGUF
models to llama-server and its own `--fit`; releases of sizeup's data end before that.
"""

from __future__ import annotations

from sizeup.formats import tensor_bytes_map
from sizeup.hardware.usable import usable_memory

MIB = 1 << 20
_MEASURED_FROM = (0, 12, 11)
"""The first release that sizes the graph by allocating it (llm/server.go buildLayout) instead of GraphSize."""


def _graph_formula(arch, ctx: int, batch: int, kv_total: int) -> tuple[int, str]:
    """fs/ggml/ggml.go GraphSize at commit 4742e12: max(partial, full offload) bytes for the 'llama' branch (every
    dense decoder with grouped-query attention here), Ollama's fallback for the others."""
    a = next((layer.attention for layer in arch.layers if layer.attention.head_dim), None)
    if a is None:
        return 0, "no attention layer: no graph term"
    emb, heads, kv_heads, vocab = arch.hidden, a.heads, max(a.kv_heads, 1), arch.vocab
    if arch.model_type == "gpt_oss":  # GraphSize's "gptoss" branch: the KV total at the full context on every layer
        full_kv = ctx * (a.head_dim + a.v_head_dim) * kv_heads * 2 * arch.num_layers
        return 4 * heads // kv_heads * full_kv // 6, "GraphSize's gptoss formula, 4 x gqa x the full-context KV / 6"
    if arch.is_moe or a.mla is not None:
        return heads // kv_heads * kv_total // 6, "Ollama's fallback for an architecture without its own branch: gqa x KV / 6"
    full = max(4 * batch * (1 + 4 * emb + ctx * (1 + heads)), 4 * batch * (emb + vocab))
    partial = 4 * batch * emb + max(
        4 * batch * (1 + emb + max(ctx, emb)) + emb * emb * 9 // 16 + 4 * ctx * (batch * heads + a.head_dim * kv_heads),
        4 * batch * (emb + vocab) + emb * vocab * 105 // 128)
    return max(full, partial), "GraphSize's llama formula, the larger of its partial- and full-offload graphs"


def whole_on_gpu(model, arch, weights, cache_tokens: int, gpus: int) -> bool:
    """Whether every layer and the output layer go to the GPU(s) with a cache of `cache_tokens`: the test Ollama's
    scheduler makes before it keeps its default parallelism (server/sched.go pickBestFitGPUs)."""
    placed, note = ollama_gpu_layers(model, arch, weights, cache_tokens, gpus)
    return note.startswith(f"ollama {model.version} offload: all ")


def ollama_gpu_layers(model, arch, weights, cache_tokens: int, gpus: int) -> tuple[int, str]:
    """(repeating layers on the GPU, the sentence saying where they went) for `arch` at `weights` with the cache
    Ollama allocates (`cache_tokens` = num_ctx x num_parallel), over `gpus` GPUs of `model.device`."""
    from sizeup.engines.profile import release_key

    device = model.device
    free = usable_memory(device).bytes.typical * gpus
    per_gpu = model.profile.value("gpu_minimum_memory_bytes", 457 * MIB)
    minimum = int((512 * MIB if device.vendor == "apple" else per_gpu) * gpus)  # Metal: 512 MiB (ml/device.go)
    sizes = tensor_bytes_map(arch, weights)
    n = arch.num_layers
    per_layer = [0] * n
    output = 0
    for t in arch.tensors():
        if t.layer is not None and t.layer < n:
            per_layer[t.layer] += sizes[t.name]
        elif t.role in ("lm_head", "norm") or (t.role == "embedding" and arch.tie_embeddings):
            output += sizes[t.name]
    batch = min(cache_tokens, int(model.profile.value("num_batch", 512)))
    kv = []
    for layer in arch.layers:
        a = layer.attention
        tokens = min(cache_tokens, a.window + batch) if a.window else cache_tokens
        kv.append(tokens * (a.head_dim + a.v_head_dim) * a.kv_heads * 2 if a.head_dim else 0)
    measured = release_key(model.version) >= _MEASURED_FROM
    graph, graph_basis = _graph_formula(arch, cache_tokens, batch, sum(kv))
    if measured:
        graph_basis += "; this release measures the graph it allocates, the formula stands for it"
    buffer = 0 if measured else per_layer[0] + kv[0]
    room = free - minimum - graph - buffer
    placed, used = 0, 0
    for i in range(n - 1, -1, -1):
        size = per_layer[i] + kv[i]
        if used + size > room:
            break
        used, placed = used + size, placed + 1
    with_output = placed == n and used + output <= room
    total = sum(per_layer) + sum(kv) + output
    where = (f"all {n} layers and the output layer on {device.id}" if with_output else
             f"{placed} of {n} layers on {device.id}, {n - placed} and the output layer on the CPU")
    note = (f"ollama {model.version} offload: {where} (Ollama's scheduler: {free / 2**30:.1f} GiB free less its "
            f"{minimum // MIB} MiB minimum, a {graph / 2**30:.2f} GiB graph ({graph_basis})"
            + (f", one layer kept free ({buffer / 2**30:.2f} GiB)" if buffer else "")
            + f"; layers with their f16 KV cache at {cache_tokens} tokens, {total / 2**30:.1f} GiB in all, placed "
              f"from the last one down; {'llm/server.go buildLayout' if measured else 'llm/memory.go EstimateGPULayers'}"
              f"); --gpu-layers N or --engine-opt num_gpu=N names the count")
    return placed, note
