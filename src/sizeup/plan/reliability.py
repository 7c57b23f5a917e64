"""How often a long job is interrupted, from a published per-GPU failure rate (data/plan/failures.yaml:
Meta's Llama 3 pre-training, 419 unexpected interruptions in 54 days on 16,384 H100s), and its checkpoint
interval by Young (1974) / Daly (2006): τ = √(2·δ·M), δ the time to write a checkpoint, M the job's mean
time between interruptions (the per-GPU figure over the job's GPUs)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from sizeup.errors import CatalogError

__all__ = ["FailureRate", "failure_rate", "job_mtbf_s"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FailureRate:
    gpu_hours_per_interruption: float
    restart_s: float
    basis: str
    source: str


@lru_cache(maxsize=1)
def failure_rate() -> FailureRate:
    from sizeup.hardware.catalog import builtin_data_dir, read_yaml

    path = builtin_data_dir() / "plan" / "failures.yaml"
    data = read_yaml(path)
    try:
        g, r = data["per_gpu"], data["restart_s"]
        hours = float(g["gpus"]) * float(g["days"]) * 24 / float(g["unexpected_interruptions"])
        if not (g["source"] and g["retrieved"] and r["retrieved"]):
            raise KeyError("source")
        return FailureRate(gpu_hours_per_interruption=hours, restart_s=float(r["value"]), basis=str(g["basis"]),
                           source=str(g["source"]))
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
        raise CatalogError(f"{path}: malformed failure rate ({e})") from None


def job_mtbf_s(gpus: int) -> float:
    """Mean time between interruptions of a synchronous job on `gpus` GPUs, in seconds."""
    return failure_rate().gpu_hours_per_interruption * 3600 / max(gpus, 1)
