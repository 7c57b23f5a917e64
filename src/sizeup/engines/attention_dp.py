"""Attention data parallelism: a replica of N GPUs whose attention runs data-parallel (each rank attends its own
requests with the attention weights whole) while its mixture-of-experts layers stay tensor / expert parallel over
all N (each sees the tokens of every rank). An engine that runs it (a switch of its own) asks these for the rank
count of a replica and for what the split changes in its scheduler and KV pool:

- every rank runs its own executor: its own scheduler, with the per-rank `max_batch_size` / `max_num_tokens`, so a
  replica holds `ranks` times as many requests and tokens a step;
- the KV cache is partitioned, not replicated: a request's cache lives whole on the rank that runs it, where tensor
  parallelism keeps each KV head on every rank that shares it (GQA / MQA with fewer KV heads than ranks, and MLA's
  latent on every rank). So the pool holds `ranks x share` times the sequences tensor parallelism does, `share`
  being the fraction of a sequence's whole cache one tensor-parallel rank holds.

Source: TensorRT-LLM's documentation page "Parallelism in TensorRT-LLM" (github.com/NVIDIA/TensorRT-LLM docs/source,
stored text id 3024480324, read 2026-12-05): attention data parallelism replicates the GEMM weights and partitions
the KV cache, "because different user requests are routed to different DP ranks"; under attention TP "if num_heads <
tensor_parallel_size, the KV-cache is replicated on every GPU"; MoE TP: "Each GPU sees all tokens". One executor loop
per rank: TensorRT-LLM PR 10273 (host_step_time at 1536 requests per rank, data/engines/tensorrt-llm.yaml).

- the step: the engine's `at_gpus` sets `attention_dp_ranks`, which the execution model states as
  `ExecutionModel.attention_ranks`; the step's ledger is then one rank's (ingest/transformer_ops.py, `ranks`): the
  embeddings, norms, attention, residual adds, dense MLPs and LM head run whole (every head, unsplit weights, no
  all-reduce) over the rank's own ceil(batch / ranks) sequences, while the routed experts run split over all the
  ranks on every rank's tokens, between an all-gather of the hidden states and a reduce-scatter of the experts'
  output (priced on the link as NCCL's ring). Sources: the same page ("the attention modules ... are replicated on
  every GPU", each rank attending its own requests; MoE TP "each GPU sees all tokens"); TensorRT-LLM
  modeling_deepseekv3.py `_compute_mlp_tp_size` ("If using attention DP, the MLP also uses DP instead of TP": dense
  MLPs replicated; read 2026-12-05); the all-gather before and reduce-scatter after the experts as vLLM-Ascend's
  data-parallel MoE path states it ("dp all_gather --> moe/mlp --> dp reduce_scatter", its PanguProMoE H2P commit,
  dev.modelhub.org.cn EngineX/xc-llm-ascend mirror, read 2026-12-05).

- the weights: every tensor but the routed experts whole on every rank (price/memory.py whole_beside_experts), so
  each GPU holds more weights and its KV pool is that much smaller ("replicates the GEMM weights", the page above).

Not priced here: an activation quantized before the all-gather (FP8 / NVFP4: a smaller message), expert parallelism
(the routed experts priced split tensor-parallel: each rank reads every routed token's row), and ranks unevenly
loaded (the busiest rank's ceil(batch / ranks) sequences set the step, an even split otherwise).
"""

from __future__ import annotations

from sizeup.ingest.arch import ModelArch

__all__ = ["cache_share", "pool_sequences"]


def cache_share(arch: ModelArch, tp: int) -> float:
    """The fraction of one sequence's whole cache a tensor-parallel rank of `tp` holds, over the model's attention
    layers weighted by their cache width: each rank its KV heads' share (at least one head: a head shared by several
    ranks is held by each), MLA's latent whole on every rank, a per-head MLA cache its heads' share."""
    held = whole = 0.0
    for layer in arch.layers:
        a = layer.attention
        if layer.ssm is not None or a is None:
            continue
        width = arch.kv_elements_per_token(layer)
        if a.mla is not None and not a.mla.expanded_v_dim:
            share = 1.0
        elif a.mla is not None:
            share = max(a.heads // tp, 1) / a.heads
        else:
            share = max(a.kv_heads // tp, 1) / a.kv_heads
        held += width * min(share, 1.0)
        whole += width
    return held / whole if whole else 1.0 / max(tp, 1)


def pool_sequences(per_rank_sequences: int, arch: ModelArch, tp: int, ranks: int) -> int:
    """The sequences a replica's KV pools hold under attention data parallelism over `ranks` ranks, from those one
    rank's pool holds at tensor parallelism `tp` (`per_rank_sequences`: its pool over a TP rank's cache of one
    sequence): every rank holds whole caches of its own requests."""
    if ranks <= 1:
        return per_rank_sequences
    return int(per_rank_sequences * ranks * cache_share(arch, tp))
