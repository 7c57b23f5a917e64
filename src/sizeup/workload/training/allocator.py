"""The caching allocator's reserve over the peak allocated memory of a fine-tuning run, from published observations
(data/training/allocator_reserve.yaml), per regime: `single` (one GPU or unsharded data parallel, batches of one
shape) and `sharded` (FSDP / ZeRO-3 over several GPUs, or batches whose shape varies between steps). The range is
the 10th percentile, median and 90th percentile of the regime's observations, so it covers the spread the sources
saw; `exclude` drops one source (leave-one-source-out)."""

from __future__ import annotations

import statistics
from functools import lru_cache

from sizeup.errors import CatalogError
from sizeup.ranges import Range
from sizeup.workload.training.config import TrainingConfig

__all__ = ["REGIMES", "reserve_regime", "reserve_range", "reserve_sources"]

REGIMES = ("single", "sharded")


@lru_cache(maxsize=1)
def _observations() -> tuple[tuple[str, str, float], ...]:
    from sizeup.hardware.catalog import builtin_data_dir, read_yaml

    path = builtin_data_dir() / "training" / "allocator_reserve.yaml"
    data = read_yaml(path)
    out = []
    for i, o in enumerate(data.get("observations") or []):
        value, regime, source = o.get("value"), o.get("regime"), o.get("source")
        if not isinstance(value, (int, float)) or regime not in REGIMES or source not in (data.get("sources") or {}):
            raise CatalogError(f"{path}: observations[{i}]: expected a number value, a regime in {REGIMES} and a "
                               "listed source")
        out.append((regime, source, float(value)))
    return tuple(out)


def reserve_sources() -> tuple[str, ...]:
    return tuple(sorted({s for _, s, _ in _observations()}))


def reserve_regime(cfg: TrainingConfig) -> str:
    par = cfg.parallel
    varying = not cfg.packing and (cfg.mean_seq is not None or cfg.padded_seq is not None)
    return "sharded" if (par.zero >= 3 and par.dp > 1) or varying else "single"


def reserve_range(regime: str, exclude: str | None = None) -> Range:
    """(p10, median, p90) of the regime's observations without source `exclude`; the other regime's where none
    is left."""
    values = sorted(v for r, s, v in _observations() if r == regime and s != exclude)
    if not values:
        values = sorted(v for r, s, v in _observations() if s != exclude)
    n = len(values)
    return Range(values[int(0.1 * (n - 1))], statistics.median(values), values[round(0.9 * (n - 1))])
