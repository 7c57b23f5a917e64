"""Training that does not fit, and what would: each change alone (a ZeRO stage, activation recomputation, a
smaller micro-batch, more GPUs placed on offers that can hold them), as `sizeup train` prints it before
exiting 2 — the way `sizeup estimate` answers a model that does not fit. And a method comparison that
quotes each method at the GPU count it needs (`train --compare`), not at one GPU's cost."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sizeup.errors import ConfigError

__all__ = ["Suggestion", "what_would_fit", "smallest_fitting_gpus", "MethodQuote", "quote_methods", "placed_config"]

_RECOMPUTE_ORDER = ("none", "selective-op", "selective", "full")
GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


@dataclass(frozen=True, slots=True, kw_only=True)
class Suggestion:
    change: str
    """The flags to add, as typed: "--zero 3", "--gpus 16 --nodes 2 --zero 3 --offer aws-p5-48xlarge"."""
    total_bytes: int | None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"change": self.change, "total_bytes": self.total_bytes, "note": self.note}


def _fits(arch, device, cfg, micro_batch: int = 1):
    from sizeup.workload.training import training_memory, with_attention

    cfg = with_attention(cfg, device)[0]
    memory = training_memory(arch, device, replace(cfg, micro_batch=micro_batch), micro_batch)
    return memory.fits, memory.total_bytes


def what_would_fit(arch, device, cfg, offers=()) -> list[Suggestion]:
    """Each change that alone makes micro-batch 1 (or the given micro-batch) fit, the rest unchanged."""
    out: list[Suggestion] = []
    par = cfg.parallel
    if cfg.micro_batch and cfg.micro_batch > 1:
        fits, total = _fits(arch, device, cfg, 1)
        if fits:
            out.append(Suggestion(change="--micro-batch 1", total_bytes=total))
    if par.dp > 1 or par.gpus > 1:
        for zero in range(par.zero + 1, 4):
            try:
                changed = replace(cfg, parallel=replace(par, zero=zero))
            except ConfigError:
                continue
            fits, total = _fits(arch, device, changed, cfg.micro_batch or 1)
            if fits:
                out.append(Suggestion(change=f"--zero {zero}", total_bytes=total))
                break
    if cfg.recompute in _RECOMPUTE_ORDER:
        for recompute in _RECOMPUTE_ORDER[_RECOMPUTE_ORDER.index(cfg.recompute) + 1:]:
            fits, total = _fits(arch, device, replace(cfg, recompute=recompute), cfg.micro_batch or 1)
            if fits:
                out.append(Suggestion(change=f"--recompute {recompute}", total_bytes=total))
                break
    more = smallest_fitting_gpus(arch, device, cfg, offers, above=par.gpus)
    if more is not None:
        out.append(more)
    return out


def smallest_fitting_gpus(arch, device, cfg, offers=(), above: int = 0) -> Suggestion | None:
    """The fewest GPUs (more than `above`) at which micro-batch 1 fits, sharded with ZeRO-3, placed on the
    offers that can hold them (plan.topology); the nodes and offer come with the flags."""
    from sizeup.plan.topology import place_job

    for n in GPU_COUNTS:
        if n <= above:
            continue
        placement = place_job(device, n, list(offers))[0] if offers else None
        nodes = placement.nodes if placement is not None else max(1, n // 8)
        try:
            par = replace(cfg.parallel, gpus=n, nodes=nodes, zero=3 if n > 1 else cfg.parallel.zero, tp=1, pp=1, ep=1)
            changed = replace(cfg, parallel=par)
        except ConfigError:
            continue
        fits, total = _fits(arch, device, changed, 1)
        if fits:
            flags = f"--gpus {n} --nodes {nodes}" + (" --zero 3" if n > 1 else "")
            if placement is not None:
                flags += f" --offer {placement.offer.id}"
            note = placement.text if placement is not None else "no offer of the device holds them: nodes of 8 assumed"
            return Suggestion(change=flags, total_bytes=total, note=note)
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class MethodQuote:
    method: str
    gpus: int | None
    """The GPU count the method needs (micro-batch 1 fits), at least the one asked for; None: over 1,024."""
    estimate: Any
    """The training estimate at that count (None when no count fits)."""
    placement: str = ""

    def to_dict(self) -> dict[str, Any]:
        e = self.estimate
        return {"method": self.method, "gpus": self.gpus, "placement": self.placement,
                "fits": bool(e is not None and e.memory.fits),
                "time_to_train_s": None if e is None or e.time_to_train_s is None else e.time_to_train_s.to_dict(),
                "cost_usd": None if e is None or e.cost_usd is None else {k: v.to_dict() for k, v in e.cost_usd.items()},
                "tokens_per_s": None if e is None else e.tokens_per_s.to_dict()}


def quote_methods(arch, device, cfgs: dict[str, Any], offers=()) -> list[MethodQuote]:
    """Each method at the GPU count it needs (the one asked for when it fits there), estimated on the offer
    that holds that count, so full fine-tuning is quoted on the 16-32 GPUs it needs, not on one GPU."""
    from sizeup.plan.topology import installed, place_job
    from sizeup.workload.training import estimate_training

    quotes = []
    for method, cfg in cfgs.items():
        gpus, changed = cfg.parallel.gpus, cfg
        if not _fits(arch, device, cfg, 1)[0]:
            found = smallest_fitting_gpus(arch, device, cfg, offers, above=cfg.parallel.gpus)
            if found is None:
                quotes.append(MethodQuote(method=method, gpus=None, estimate=None))
                continue
            gpus = int(found.change.split()[1])
            placement = place_job(device, gpus, list(offers))[0] if offers else None
            nodes = placement.nodes if placement is not None else max(1, gpus // 8)
            changed = replace(cfg, parallel=replace(cfg.parallel, gpus=gpus, nodes=nodes, zero=3, tp=1, pp=1, ep=1),
                              offer=placement.offer.id if placement is not None else cfg.offer,
                              network_gbit_per_s=placement.network_gbit_per_s if placement is not None
                              else cfg.network_gbit_per_s)
        placement = place_job(device, gpus, list(offers))[0] if offers else None
        dev = installed(device, placement.offer) if placement is not None else device
        estimate = estimate_training(arch, dev, changed, [placement.offer] if placement is not None else list(offers))
        quotes.append(MethodQuote(method=method, gpus=gpus, estimate=estimate,
                                  placement=placement.text if placement is not None else ""))
    return quotes


def placed_config(device, cfg, offers, nodes_given: bool):
    """(device, config, offers to price on, note) of a `train` run placed as plan.topology allows: on the
    offer named (`--offer`), else the cheapest that holds the GPUs in one instance or on a stated network.
    Without `--nodes` the nodes are the placement's instances. When nothing can hold the job it is not
    priced (offers empty) and the note says why."""
    import math

    from sizeup.plan.topology import installed, place_job

    par = cfg.parallel
    if cfg.offer:
        offer = next((o for o in offers if o.id == cfg.offer), None)
        if offer is None or nodes_given:
            return device, cfg, offers, None
        nodes = math.ceil(par.gpus / offer.gpu_count)
        return device, replace(cfg, parallel=replace(par, nodes=nodes)), offers, None
    placement, why = place_job(device, par.gpus, list(offers))
    if placement is None:
        nodes = par.nodes if nodes_given else max(1, math.ceil(par.gpus / 8))
        return device, replace(cfg, parallel=replace(par, nodes=nodes)), [], (
            f"{why}: not priced; {nodes} node{'s' if nodes > 1 else ''} of {par.gpus // nodes} GPUs assumed")
    nodes = par.nodes if nodes_given else placement.nodes
    return installed(device, placement.offer), replace(cfg, offer=placement.offer.id,
                                                       parallel=replace(par, nodes=nodes)), [placement.offer], None
