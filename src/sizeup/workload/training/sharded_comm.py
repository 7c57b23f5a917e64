"""Data-parallel collectives of a training step, phase by phase, as ZeRO and FSDP run them.

- ZeRO-0 (DDP) and ZeRO-1: one all-reduce of the gradients per optimizer step, bucketed behind the backward pass
  (Li et al. 2020, PyTorch DDP; Megatron's distributed optimizer overlaps its reduce-scatter and parameter
  all-gather the same way); only what exceeds the backward is exposed.
- ZeRO-2 (DeepSpeed stage 2): the gradients are reduce-scattered during every micro-step's backward (overlap_comm),
  and after the optimizer step the updated 16-bit parameters are all-gathered once, with nothing to hide behind
  (the next forward needs them): DeepSpeed stage_1_and_2.py step() ends in all_gather_dp_groups.
- ZeRO-3 / FSDP full shard: every micro-step all-gathers each layer's parameters before its forward and again
  before its backward (prefetched during the previous layer's compute), and reduce-scatters its gradients after
  its backward (Rajbhandari et al. 2020 §5; PyTorch FSDP, Zhao et al. 2023). The forward hides its gathers behind
  the forward's compute, the backward its gathers and reduce-scatters behind the backward's; the first layer's
  gather and the last layer's reduce-scatter have nothing before them to hide behind. The frozen base of LoRA is
  sharded and gathered too.
"""

from __future__ import annotations

from collections.abc import Callable

from sizeup.ranges import Range
from sizeup.workload.training.config import TrainingConfig

__all__ = ["data_parallel_time", "exposed"]

Collective = Callable[[str, float, float], Range]
"""(kind, bytes per GPU before the collective, share of those bytes in routed experts) -> seconds."""


def exposed(comm: Range, hidden_behind: Range) -> Range:
    """Communication left over after overlapping it with `hidden_behind` (sorted into a range)."""
    return Range(*sorted(max(0.0, getattr(comm, lv) - getattr(hidden_behind, lv)) for lv in ("low", "typical", "high")))


def data_parallel_time(cfg: TrainingConfig, layers: int, gather_bytes: float, grad_bytes: float, t_fwd: Range,
                       t_bwd: Range, accumulation: int, collective: Collective, expert_share: float,
                       trained_expert_share: float) -> tuple[Range, str]:
    """Exposed data-parallel seconds per optimizer step and the note saying how they were priced. `gather_bytes`:
    the parameters one GPU's model shard gathers (16-bit, or the 4-bit storage of QLoRA); `grad_bytes`: its
    gradients; `layers`: per pipeline stage."""
    zero = cfg.parallel.zero
    if zero >= 3:
        first = 1 / max(1, layers)
        gather = collective("all_gather", gather_bytes, expert_share)
        scatter = collective("reduce_scatter", grad_bytes, trained_expert_share)
        forward = exposed(gather.scale(1 - first), t_fwd.scale(1 - first)) + gather.scale(first)
        both = gather + scatter
        backward = exposed(both.scale(1 - first), t_bwd.scale(1 - first)) + both.scale(first)
        note = (f"ZeRO-3 / FSDP: each micro-step all-gathers the parameters ({gather_bytes / 1e9:.2f} GB per GPU) "
                "for the forward and again for the backward and reduce-scatters the gradients; each phase hides its "
                "traffic behind its own compute (prefetch), the first gather and the last reduce-scatter are exposed")
        return (forward + backward).scale(accumulation), note
    if zero == 2:
        scatter = exposed(collective("reduce_scatter", grad_bytes, trained_expert_share), t_bwd).scale(accumulation)
        gather = collective("all_gather", grad_bytes, trained_expert_share)
        note = ("ZeRO-2: gradients reduce-scattered behind every micro-step's backward; the updated 16-bit parameters "
                "all-gathered once after the optimizer step, exposed")
        return scatter + gather, note
    note = "data-parallel gradient all-reduce overlaps the backward pass; only what exceeds it is exposed"
    return exposed(collective("all_reduce", grad_bytes, trained_expert_share), t_bwd), note
