"""Tensor-parallel collectives of an inference step: NCCL's ring on the device's link (price/comm.py) unless the
engine runs its own all-reduce, the engine's host time to drive its workers, and, where every rank launches its
kernels eagerly, the wait of each collective for the latest rank (rank drift)."""

from __future__ import annotations

from collections.abc import Callable

from sizeup.engines.base import ExecutionModel, TensorParallel
from sizeup.hardware.schema import DeviceSpec
from sizeup.ledger import Ledger, OpKind
from sizeup.ranges import Range
from sizeup.workload.nodes import Nodes

__all__ = ["eager_rank_drift", "tensor_parallel_comm"]

ZERO = Range(0.0, 0.0, 0.0)


def tensor_parallel_comm(ledger: Ledger, device: DeviceSpec, gpus: int, model: ExecutionModel | None,
                         by_bound_s: dict[str, float] | Callable[[], dict[str, float]] | None = None,
                         nodes: Nodes | None = None) -> tuple[Range, Range, list[str]]:
    """(time of the ledger's collectives over `gpus` tensor-parallel GPUs, the engine's host time per step to drive
    them, notes): NCCL's ring on the device's link (price/comm.py) unless the engine runs its own all-reduce
    (ExecutionModel.tensor_parallel). `by_bound_s`: the phase's roofline time by bound (or a function giving it,
    called only for an engine that launches eagerly), so that such an engine pays its rank drift
    (`eager_rank_drift`); None: not priced. `nodes`: where the group spans nodes (workload/nodes.py), its collectives
    run in two levels (price/comm.py group_collective_time) and no engine's own all-reduce (peer memory: one node)."""
    from sizeup.price.comm import (collective_time, device_link, for_group, group_collective_time, network_link,
                                   with_latency)  # tensor parallel only

    link = device_link(device) and for_group(device_link(device), gpus)  # the group's link (bridge span, mesh links)
    if link is None:
        return ZERO, ZERO, [f"{device.id}: no link bandwidth in the catalog: tensor-parallel communication not priced"]
    tp = model.tensor_parallel(link.kind, gpus) if model is not None else None
    own = None if tp is None or tp.all_reduce_latency_s is None else with_latency(link, tp.all_reduce_latency_s)
    spans = nodes is not None and gpus > nodes.per_node
    if spans:  # the group across nodes: the library's two-level collectives, no one-pass peer-memory all-reduce
        own, inter = None, network_link(nodes.network_bytes_per_s_per_gpu())
    cap = tp.all_reduce_max_bytes if tp is not None and tp.all_reduce_max_bytes else float("inf")
    comm = ZERO
    for o in ledger.ops:
        if o.kind == OpKind.COMM:  # one per layer
            on = own if own is not None and o.op == "all_reduce" and o.bytes_written < cap else link
            full = max(o.bytes_read, o.bytes_written)  # the full tensor: a reduce-scatter writes 1/tp of what it reads
            one = (group_collective_time(o.op, full, gpus, nodes.per_node, device_link(device), inter) if spans
                   else collective_time(o.op, full, gpus, on))
            comm = comm + one.scale(o.count)
    if tp is None:
        return comm, ZERO, []
    drift, drift_notes = ZERO, []
    if tp.eager_launches and by_bound_s is not None:
        split = by_bound_s() if callable(by_bound_s) else by_bound_s
        drift, drift_notes = eager_rank_drift(ledger, device, gpus, tp, split)
    return comm + drift, tp.step_host_s or ZERO, [*tp.notes, *drift_notes]


def eager_rank_drift(ledger: Ledger, device: DeviceSpec, gpus: int, tp: TensorParallel,
                     by_bound_s: dict[str, float]) -> tuple[Range, list[str]]:
    """(time the phase's collectives wait for the latest rank, notes) where the engine launches every kernel and
    collective eagerly from one process per GPU (TensorParallel.eager_launches): each collective waits
    price/comm.py eager_rank_wait(gpus), times the share of the step in which the GPUs wait for their hosts (the
    roofline's host-bound time over its GPU-bound time, capped at 1: the measurement's kernels shorter than the
    launches); nothing under a captured graph or where the kernels outlast the launches."""
    from sizeup.price.comm import eager_rank_wait  # eager tensor parallel only

    collectives = sum(o.count for o in ledger.ops if o.kind == OpKind.COMM)
    gpu_s = by_bound_s.get("memory", 0.0) + by_bound_s.get("compute", 0.0)
    exposed = 1.0 if gpu_s <= 0 else min(1.0, by_bound_s.get("overhead", 0.0) / gpu_s)
    if not tp.eager_launches or collectives <= 0 or exposed <= 0:
        return ZERO, []
    wait = eager_rank_wait(gpus, device.vendor)
    if wait is None:
        return ZERO, [(f"eager launches on {gpus} {device.id}: the wait of each collective for the latest rank is not "
                       f"priced (comm.yaml eager_rank_wait was measured with NCCL; none read for {device.vendor})")]
    drift = wait.scale(collectives * exposed)
    return drift, [(f"eager launches on {gpus} GPUs: each of the step's {collectives:,.0f} collectives waits "
                    f"{wait.typical * 1e6:,.0f} µs for the latest rank's host (rank drift, comm.yaml eager_rank_wait),"
                    f" times {exposed:.0%} (the step's host-bound share): {drift.typical * 1e3:,.2f} ms")]
