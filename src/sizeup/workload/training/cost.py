"""What a training run costs: the offer it runs on, its length (tokens or epochs) in steps, and its price."""

from __future__ import annotations

import math

from sizeup.errors import ConfigError
from sizeup.hardware.schema import DeviceSpec, Offer
from sizeup.ranges import Range
from sizeup.workload.training.config import TrainingConfig

__all__ = ["pick_offer", "run_cost"]


def pick_offer(device: DeviceSpec, gpus: int, offers, wanted: str | None) -> Offer | None:
    candidates = [o for o in offers if o.gpu == device.id]
    if wanted:
        chosen = [o for o in offers if o.id == wanted]
        if not chosen:
            raise ConfigError(f"--offer {wanted!r}: no such offer (see 'sizeup hw offers')")
        return chosen[0]
    if not candidates:
        return None
    return min(candidates, key=lambda o: (math.ceil(gpus / o.gpu_count) * o.on_demand_usd_per_hour, o.id))


def run_cost(cfg: TrainingConfig, step_s: Range, tokens_per_step: int,
             offer: Offer | None) -> tuple[Range | None, dict[str, Range] | None, tuple[str, ...]]:
    """Time to train and its cost on `offer` (on demand, and spot where the offer has a spot price),
    None when the run's length is not given; with the note on the price used."""
    par = cfg.parallel
    notes: list[str] = []
    total_tokens = cfg.tokens
    if total_tokens is None and cfg.epochs is not None:
        if not cfg.dataset_tokens:
            raise ConfigError("--epochs needs --dataset-tokens (tokens in one pass over the data)")
        total_tokens = int(cfg.epochs * cfg.dataset_tokens)
    time_to_train = cost = None
    if total_tokens:
        steps = math.ceil(total_tokens / tokens_per_step)
        time_to_train = step_s.scale(steps)
        if offer is not None:
            instances = math.ceil(par.gpus / offer.gpu_count)
            hours = time_to_train.scale(1 / 3600)
            cost = {"on_demand": hours.scale(instances * offer.on_demand_usd_per_hour)}
            if offer.spot_usd_per_hour:
                cost["spot"] = hours.scale(instances * offer.spot_usd_per_hour)
            notes.append(f"cost on {instances} × {offer.id} at ${offer.on_demand_usd_per_hour:.2f}/h "
                               f"(price of {offer.price_date}); spot without preemption overhead")
    return time_to_train, cost, tuple(notes)
