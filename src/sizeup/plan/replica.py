"""A serving replica's model for the planner (plan/capacity.py ReplicaModel): its prefill, its decode step at each batch
and what joins a mixed step, priced as `estimate` prices them, so the plan's simulation runs the estimate's steps.

A replica whose tensor-parallel group spans nodes (`InferenceConfig.gpus_per_node`, else the device's board:
workload/nodes.py) pays the two-level collectives across nodes in its decode steps exactly as the estimate does
(workload/tensor_parallel.py tensor_parallel_comm with the estimate's node layout); a group inside one node is priced
as before, to the bit.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from sizeup.engines.base import ExecutionModel
from sizeup.hardware.schema import DeviceSpec
from sizeup.ingest.hf_config import ModelArch
from sizeup.ingest.transformer_ops import Step, step_ledger
from sizeup.plan.capacity import ReplicaModel
from sizeup.price import streaming
from sizeup.price.execution import expert_rows, phase_efficiency
from sizeup.price.roofline import price
from sizeup.workload.host_floor import host_terms
from sizeup.workload.inference import InferenceConfig, estimate_inference, execution_for, tensor_parallel_comm
from sizeup.workload.nodes import Nodes, node_layout
from sizeup.workload.quantize import get_format
from sizeup.workload.serving import RequestMix
from sizeup.workload.serving_runs import intake, service
from sizeup.workload.serving_steps import Steps, kernel_grid
from sizeup.workload.towers import decoder_arch, decoder_cache_tokens, decoder_prompt

__all__ = ["replica_model"]


def replica_model(arch: ModelArch, device: DeviceSpec, cfg: InferenceConfig, max_batch: int,
                  execution: ExecutionModel | None = None) -> ReplicaModel:
    """Prefill as fixed + per-token time (two priced prompts), decode step time at batch sizes up to
    `max_batch` (priced ledgers at the mean context of a generation, with the tensor-parallel collectives on
    `device`'s link, raised to the engine's host time for the iteration and its front process's time, as `estimate`
    prices them: workload/host_floor.py `raised`), scheduled by the engine's batching policy (its
    max_sequences caps `max_batch`, the KV pool's bound). `execution`: the engine on `device`, resolved once by the
    caller (default: from `cfg`)."""
    model = execution or execution_for(device, cfg)
    policy = model.batching
    max_batch = max(1, min(max_batch, policy.max_sequences or max_batch))
    step = model.step_overhead(arch, decode=True)
    step_s = step.typical if step else 0.0
    p = cfg.prompt
    first = estimate_inference(arch, device, replace(cfg, prompt=p, output=1), limits=False, execution=model)
    t1 = first.prefill
    t2 = estimate_inference(arch, device, replace(cfg, prompt=2 * p, output=1),
                            limits=False, execution=model).prefill
    per_token = max((t2.latency_s.typical - t1.latency_s.typical) / p, 1e-9)
    k = streaming.compute_batch(p)  # a step's compute per token, as workload/serving.py's steps read it
    compute = estimate_inference(arch, device, replace(cfg, batch=k, prompt=p, output=1), limits=False,
                                 execution=model).prefill.latency_s.typical / (k * p)
    fixed = max(t1.latency_s.typical - per_token * p, 0.0)
    batches = sorted({1, *[2 ** k for k in range(1, 12) if 2 ** k < max_batch], max_batch})
    times, gpu_times, host = [], [], []
    fmt = get_format(cfg.weights)
    # the decoder as `estimate` runs it: T5's cross-attention over the prompt, its own tokens from one start token
    decoder = decoder_arch(arch, cfg.prompt)
    context = decoder_prompt(arch, cfg.prompt) + max(cfg.output // 2, 1)
    ranks = model.at_gpus(cfg.gpus).attention_ranks  # attention data parallelism: one rank's ledger
    nodes = replica_nodes(device, cfg, model)
    for b in batches:
        eff = phase_efficiency(model, True, fmt, b, expert_rows(decoder, b))  # as estimate prices batch b
        ledger = step_ledger(decoder, Step(batch=b, new_tokens=1, context=context), fmt, cfg.kv_dtype, "bf16",
                             cfg.gpus, ranks)
        eager = model.extra_launches(ledger, fmt.compute_dtype == "fp32", eff.overhead_s)  # as estimate prices it
        extra = model.step_extra(decoder, ledger, fmt.id, True, b)  # a format's own path (bitsandbytes), as estimate
        roof = price(ledger, device, eff)
        gpu = (roof.total_s.typical + step_s + (eager[0].typical if eager else 0.0)
               + (extra[0].typical if extra else 0.0) + _tp_comm_s(ledger, device, cfg.gpus, model, roof, nodes))
        host.append(host_terms(model, b, cfg.gpus, "typical"))  # the engine's host time and front process, as estimate
        gpu_times.append(gpu)
        times.append(max(gpu + host[-1][0], host[-1][1]))  # workload/host_floor.py raised
    return ReplicaModel(prefill_fixed_s=fixed, prefill_per_token_s=per_token, decode_batches=tuple(batches),
                        decode_step_s=tuple(times), gpu_step_s=tuple(gpu_times), host_s=tuple(host),
                        max_batch=max_batch, scheduling=policy.scheduling,
                        mixed_steps=policy.mixes, chunked_prefill=policy.chunked_prefill,
                        max_step_tokens=policy.max_batched_tokens, steps_per_schedule=policy.steps_per_schedule,
                        request_s=intake(model, "typical"),  # the front end's queue, as the estimate steps it
                        read_terms=streaming.read_terms(arch), token_compute_s=compute,
                        joined=_joined(arch, device, cfg, model) if policy.mixes else None,
                        read_s=streaming.weight_read(device, first.memory.weights_bytes, arch, times[0]),
                        front_s=model.load_policy.first_token_lag_steps * times[0]
                        + service(model, "typical") - intake(model, "typical"),
                        **_reserved_pool(first, model.load_policy,
                                         decoder_cache_tokens(arch, p, replace(cfg, prompt=p, output=1).cache_tokens)
                                         * cfg.batch))


def _reserved_pool(first, policy, tokens: int) -> dict:
    """The KV pool (in tokens) and admission rule of an engine that keeps room for outputs to come (its load policy's
    `output_reserve`), so the plan's scheduler admits as the estimate's does; {} where the engine keeps none (its
    max_batch, the pool at a request's mean context, bounds the running requests). `first`: an estimate of
    `tokens` cached tokens (the plan's batch of one prompt and its first token)."""
    memory = first.memory
    if policy.output_reserve is None or not memory.kv_cache_needed_bytes or not memory.kv_cache_bytes:
        return {}
    return {"kv_tokens": int(memory.kv_cache_bytes * tokens / memory.kv_cache_needed_bytes),
            "kv_watermark": policy.kv_watermark, "output_reserve": policy.output_reserve}


def _joined(arch: ModelArch, device: DeviceSpec, cfg: InferenceConfig, model: ExecutionModel):
    """`ReplicaModel.joined`: what `rows - batch` prompt tokens add to a decode step of `batch` sequences, priced by
    the estimate's own function (workload/serving_steps.py `Steps.joined`: the decodes' GEMMs, the tensor-parallel
    collectives and every other term of a decode step at the kernel of the step's rows, between the batches the
    estimate prices, and a token's compute at that kernel), at the typical corner.

    Where the decodes keep their own kernel at the step's rows (`Steps.keeps_kernel`: at every batch
    `Steps.sequences` may read for `batch`), their kernel term is 0 and the decode estimates it would read are not
    priced: `streaming.joined` with a token's compute at the step's rows, the value `Steps.joined` gives there, at a
    fraction of its cost (a plan prices steps at hundreds of batches)."""
    steps = Steps(arch, device, cfg, model, RequestMix(input_tokens=cfg.prompt, output_tokens=cfg.output))
    terms = streaming.read_terms(arch)
    read = cache(lambda: steps.read("typical"))  # R of one token: the same for every step
    per_token: dict[int, float] = {}  # by the rows' kernel grid, which is all Steps.per_token reads of the rows

    def at(batch: int, rows: int) -> float:
        if not steps.keeps_kernel(batch, rows):
            return steps.joined(batch, rows - batch, "typical")
        grid = kernel_grid(rows)
        if grid not in per_token:
            per_token[grid] = steps.per_token("typical", rows)
        return streaming.joined(read(), per_token[grid], batch, rows, terms)

    return at


def replica_nodes(device: DeviceSpec, cfg: InferenceConfig, model: ExecutionModel) -> Nodes | None:
    """The replica's node layout as the estimate takes it (workload/inference.py: workload/nodes.py node_layout of
    the tensor-parallel GPUs, `--gpus-per-node` and `--network-gbps`; a split by layers runs one GPU at a time, no
    collectives); None inside one node."""
    layers = model.MULTI_GPU == "layers" or cfg.split == "layers"
    return node_layout(device, 1 if layers else cfg.gpus, cfg.gpus_per_node, cfg.network_gbit_per_s)[0]


def _tp_comm_s(ledger, device: DeviceSpec, gpus: int, model: ExecutionModel, roof, nodes: Nodes | None = None) -> float:
    """The tensor-parallel collectives of one step on the device's link and the engine's host time to drive its
    workers, as `estimate` adds them (workload/tensor_parallel.py tensor_parallel_comm: the engine's own all-reduce
    where it runs one, the rank drift of eager launches from the step's roofline split `roof`, the two-level
    collectives where the group spans the `nodes`)."""
    if gpus <= 1:
        return 0.0
    def by_bound() -> dict[str, float]:  # only for an engine that launches eagerly
        return {k: sum(v["time_by_bound_s"].get(k, 0.0) for v in roof.by("phase").values())
                for k in ("compute", "memory", "overhead")}

    comm, host, _ = tensor_parallel_comm(ledger, device, gpus, model, by_bound, nodes)
    return comm.typical + host.typical
