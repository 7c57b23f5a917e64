"""From a trial to the full job: hours and cost of `epochs` passes over `samples` samples, from a measured trial's
step times (or a predicted step time), with the trial's spread as the range.

    steps per epoch = samples / batch (the last, partial batch priced by its samples: step time taken as
                      proportional to the samples in it; with drop_last the partial batch is not run)
    job time        = epochs × steps per epoch × step time + restarts × epoch restart
    restarts        = ⌈epochs⌉ (the loader starts its workers again at every epoch; measured in the trial as the
                      extra wait at an epoch's first batch, 0 when the trial crossed no boundary — then said)

The step time is the mean of the trial's timed steps (a job's time is a sum of steps: the mean, not the
median, adds up). Its range: the trial's steps cut into consecutive blocks of `BLOCK` steps; the lowest and the
highest block mean are low and high — how much the rate drifted within the trial (contention, clocks, the
loader), not the spread of single steps, which averages out over thousands.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sizeup.errors import ConfigError
from sizeup.ranges import Range

__all__ = ["BLOCK", "JobScale", "scale_job", "step_range"]

BLOCK = 10


def step_range(step_s: Sequence[float], block: int = BLOCK) -> Range:
    """(lowest block mean, mean, highest block mean) of the step times."""
    if len(step_s) < 2:
        raise ConfigError("a trial needs at least 2 timed steps to scale")
    mean = statistics.fmean(step_s)
    n = max(1, len(step_s) // block)
    size = len(step_s) // n
    means = [statistics.fmean(step_s[i * size:(i + 1) * size]) for i in range(n)]
    return Range(min(min(means), mean), mean, max(max(means), mean))


@dataclass(frozen=True, slots=True, kw_only=True)
class JobScale:
    samples: int
    epochs: float
    batch_size: int
    steps: float
    step_s: Range
    epoch_restart_s: float
    time_s: Range
    hourly_usd: float | None = None
    cost_usd: Range | None = None
    assumptions: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"samples": self.samples, "epochs": self.epochs, "batch_size": self.batch_size, "steps": self.steps,
                "step_s": self.step_s.to_dict(), "epoch_restart_s": self.epoch_restart_s,
                "time_s": self.time_s.to_dict(), "hours": self.time_s.scale(1 / 3600).to_dict(),
                "hourly_usd": self.hourly_usd,
                "cost_usd": None if self.cost_usd is None else self.cost_usd.to_dict(),
                "assumptions": list(self.assumptions)}


def scale_job(step_s: Range, batch_size: int, samples: int, epochs: float, *, epoch_restart_s: float | None = None,
              drop_last: bool = False, hourly_usd: float | None = None, source: str = "trial",
              range_basis: str = f"lowest and highest mean over blocks of {BLOCK} steps",
              restart_unknown: str = "the trial crossed no epoch boundary") -> JobScale:
    """The full job's time (and cost at `hourly_usd`) from one step's time range; `range_basis` says where the
    step's range comes from, `restart_unknown` why an epoch restart is not known (when it is None)."""
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ConfigError(f"--samples {samples!r}: expected a positive number of samples")
    if not (isinstance(epochs, (int, float)) and math.isfinite(epochs) and epochs > 0):
        raise ConfigError(f"--epochs {epochs!r}: expected a positive number")
    if batch_size < 1:
        raise ConfigError(f"batch size {batch_size}: expected 1 or more")
    per_epoch = samples // batch_size if drop_last else samples / batch_size
    if per_epoch <= 0:
        raise ConfigError(f"--samples {samples} with batch {batch_size} and drop_last: no full batch per epoch")
    steps = per_epoch * epochs
    restarts = math.ceil(epochs)
    restart = epoch_restart_s or 0.0
    time_s = Range(step_s.low * steps + restart * restarts, step_s.typical * steps + restart * restarts,
                   step_s.high * steps + restart * restarts)
    notes = [f"{samples:,} samples / batch {batch_size} = {per_epoch:,.2f} steps per epoch"
             + (" (drop_last: the partial batch is not run)" if drop_last else
                " (a partial last batch priced by its samples)") + f"; x {epochs:g} epochs = {steps:,.1f} steps",
             f"step time from the {source}: {step_s.typical * 1e3:,.2f} ms (range {step_s.low * 1e3:,.2f} - "
             f"{step_s.high * 1e3:,.2f} ms: {range_basis})"]
    if epoch_restart_s is None:
        notes.append(f"the loader's restart at each epoch is not in the figure ({restart_unknown}): with workers "
                     "it adds their start-up once per epoch")
    elif restart > 0:
        notes.append(f"+ {restarts} epoch restarts x {restart * 1e3:,.1f} ms (the loader's start-up, measured)")
    cost = None
    if hourly_usd is not None:
        if not (hourly_usd > 0 and math.isfinite(hourly_usd)):
            raise ConfigError(f"hourly price {hourly_usd!r}: expected a positive number of USD")
        cost = time_s.scale(hourly_usd / 3600)
    return JobScale(samples=samples, epochs=float(epochs), batch_size=batch_size, steps=steps, step_s=step_s,
                    epoch_restart_s=restart, time_s=time_s, hourly_usd=hourly_usd, cost_usd=cost,
                    assumptions=tuple(notes))
