"""Pipeline parallelism of an inference server (`sizeup estimate --pp N`): the model's layers split into N stages of
consecutive layers, each stage on `gpus / N` GPUs (tensor parallel inside the stage), as serving engines' pipeline
parallel sizes run it.

What it prices (workload/inference.py asks these functions):
- memory: each GPU holds its stage's share of the layers' weights and KV cache (the embedding on the first stage, the
  head on the last: the larger of the two is counted), one layer's activations (price/memory.py `MemoryConfig.pp`);
- time: the running sequences are split into N micro-batches of ceil(B / N), which follow each other through the
  stages, so every stage is busy with one micro-batch while the others work on theirs. A sequence advances one token
  per round trip: every stage in turn at the micro-batch's size (the time of the whole model at batch ceil(B / N) on
  one stage's GPUs) plus the N - 1 hops that carry its hidden states to the next stage over the GPU link. At batch 1
  that is the whole model's time in sequence plus the hops (no gain from the pipeline); under load the B sequences
  advance together once per round trip, so throughput grows with the micro-batches that fill the stages.
- the hops: a point-to-point send of micro-batch x new tokens x hidden x the activations' bytes (the residual
  stream; a stage hands on hidden_states and residual: two such tensors, `STAGE_TENSORS`) over the device's link
  (price/comm.py `device_link`: NVLink where the catalog lists it, else PCIe), with the link's latency per send.
"""

from __future__ import annotations

from sizeup.errors import ConfigError
from sizeup.hardware.schema import DeviceSpec
from sizeup.ranges import Range
from sizeup.workload.nodes import Nodes, stage_crossings

__all__ = ["check_pipeline", "micro_batch", "hop_time", "pipeline_note"]

STAGE_TENSORS = 2
"""Tensors of hidden size a stage sends per token: the hidden states and the residual (an engine's model forwards
return both on every rank but the last: `IntermediateTensors({"hidden_states": ..., "residual": ...})` unless
`get_pp_group().is_last_rank`, in the model files of github.com/vllm-project/vllm, read 2026-12-05); the same count
is taken for every engine (an upper bound where an engine sends one tensor)."""


def check_pipeline(pp: int, gpus: int, layers: int, layer_split: bool) -> None:
    """One-line errors for a pipeline the estimate cannot place."""
    if pp < 1:
        raise ConfigError(f"--pp {pp}: expected a positive number of pipeline stages")
    if pp == 1:
        return
    if gpus % pp:
        raise ConfigError(f"--pp {pp}: --gpus {gpus} is not a multiple of the {pp} pipeline stages")
    if pp > layers:
        raise ConfigError(f"--pp {pp}: more pipeline stages than the model's {layers} layers")
    if layer_split:
        raise ConfigError(f"--pp {pp} with a layer split (--split layers, or an engine that places whole layers per "
                          f"GPU): give one of them")


def micro_batch(batch: int, pp: int) -> int:
    """Sequences per micro-batch: the batch split evenly over the stages (rounded up)."""
    return -(-batch // max(pp, 1))


def hop_time(device: DeviceSpec, pp: int, tokens: int, hidden: int, act_bytes: int, nodes: Nodes | None = None,
             tp: int = 1) -> tuple[Range, str | None]:
    """Time of the pp - 1 sends of one micro-batch's `tokens` hidden states between stages, and a note where the
    catalog lists no link (then not priced). `nodes`: the stages of `tp` GPUs spread over nodes (workload/nodes.py):
    a send between stages on different nodes goes over the network (its rate per GPU and latency)."""
    if pp <= 1:
        return Range(0.0, 0.0, 0.0), None
    from sizeup.price.comm import device_link, network_link, send_time

    link = device_link(device)
    if link is None:
        return Range(0.0, 0.0, 0.0), (f"{device.id}: no link bandwidth in the catalog: the pipeline's sends between "
                                      f"stages not priced")
    size = tokens * hidden * act_bytes * STAGE_TENSORS
    across = 0 if nodes is None else stage_crossings(pp, tp, nodes.per_node)
    hops = send_time(size, link).scale(pp - 1 - across)
    if across:
        hops = hops + send_time(size, network_link(nodes.network_bytes_per_s_per_gpu())).scale(across)
    return hops, None


def pipeline_note(pp: int, tp: int, batch: int, device: DeviceSpec) -> str:
    m = micro_batch(batch, pp)
    return (f"--pp {pp}: {pp} pipeline stages of consecutive layers, each on {tp} {device.id} (tensor parallel inside "
            f"the stage); each GPU holds its stage's share of the weights and KV cache; the {batch} sequence(s) run as "
            f"{min(batch, pp)} micro-batch(es) of {m}: a step is every stage in turn at {m} sequence(s) plus "
            f"{pp - 1} send(s) of the hidden states between stages, and the stages work on different micro-batches "
            f"at once")
