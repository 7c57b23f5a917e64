"""Leak watch, trend fitting: a robust line through memory over time, fitted over the sawtooth's minima.

A process's resident memory is a sawtooth: the garbage collector, an allocator's cache or a per-request buffer
grows it and then drops it back. A leak is growth of the sawtooth's *floor*, so the trend is fitted over the
sawtooth's minima (the lowest sample between two drops), not over every sample: a sawtooth without growth is flat.

The fit is Theil–Sen (Sen 1968, "Estimates of the regression coefficient based on Kendall's tau", JASA 63:1379):
the slope is the median of the slopes of all pairs of points (a random subset of pairs when there are many), and
its band is Sen's rank confidence interval from the same pairwise slopes at the Kendall-tau variance
n(n-1)(2n+5)/18. The confidence that memory grows is the one-sided Mann–Kendall test on the same pairs. Both
assume independent points; the minima of successive sawtooth cycles are close to that, raw samples are not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

from sizeup.errors import ConfigError, MeasureError
from sizeup.units import KIB, parse_duration_s

__all__ = ["DEFAULT_BAND_LEVEL", "MIN_POINTS", "Trend", "theil_sen", "sawtooth_minima", "fit_trend"]

_S_PER_HOUR = parse_duration_s("1h")
DEFAULT_BAND_LEVEL = 0.8
"""Two-sided level of the slope band: 0.8 is the 10th to the 90th percentile."""
_MAX_PAIRS = 200_000
_MIN_POINTS = 3
MIN_POINTS = _MIN_POINTS
"""Fewer samples than this give no trend."""
_DROP_FLOOR_BYTES = 64 * KIB
"""A fall smaller than this is page-level jitter, never a sawtooth drop."""
_DROP_FACTOR = 4.0
"""A fall counts as a sawtooth drop when larger than this many times the median absolute step."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Trend:
    """A Theil–Sen line through memory over time, with Sen's confidence band for its slope."""

    slope_bytes_per_s: float
    """Median of the pairwise slopes."""
    intercept_bytes: float
    """Memory at time 0 (the first sample): the median of y - slope·t."""
    band_low_bytes_per_s: float
    band_high_bytes_per_s: float
    """Sen's rank confidence interval of the slope at `band_level`."""
    band_level: float
    confidence: float
    """One-sided Mann–Kendall probability that memory grows (0.5: no evidence either way)."""
    points: int
    """How many points the line was fitted over (the sawtooth minima)."""
    samples: int
    """How many samples those points were taken from."""
    duration_s: float
    """Time from the first to the last sample."""
    pairs: int
    """How many pairwise slopes were used (all pairs, or a random subset of `_MAX_PAIRS`)."""
    notes: tuple[str, ...] = ()
    """Caveats the reader should see, e.g. too few sawtooth cycles."""

    def __post_init__(self) -> None:
        if not self.band_low_bytes_per_s <= self.slope_bytes_per_s <= self.band_high_bytes_per_s:
            raise ConfigError(f"slope {self.slope_bytes_per_s!r} lies outside its band "
                              f"[{self.band_low_bytes_per_s!r}, {self.band_high_bytes_per_s!r}]")
        if not 0.0 < self.band_level < 1.0:
            raise ConfigError(f"band_level {self.band_level!r} is not between 0 and 1")

    @property
    def slope_bytes_per_hour(self) -> float:
        return self.slope_bytes_per_s * _S_PER_HOUR

    @property
    def band_bytes_per_hour(self) -> tuple[float, float]:
        return self.band_low_bytes_per_s * _S_PER_HOUR, self.band_high_bytes_per_s * _S_PER_HOUR

    @property
    def zero_in_band(self) -> bool:
        return self.band_low_bytes_per_s <= 0.0 <= self.band_high_bytes_per_s

    def to_dict(self) -> dict:
        low, high = self.band_bytes_per_hour
        return {f.name: getattr(self, f.name) for f in fields(self)} | {
            "notes": list(self.notes), "slope_bytes_per_hour": self.slope_bytes_per_hour,
            "band_low_bytes_per_hour": low, "band_high_bytes_per_hour": high, "zero_in_band": self.zero_in_band}


def _normal_cdf(z: float) -> float:
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def _normal_quantile(p: float) -> float:
    """Inverse of the standard normal CDF by bisection (accurate to 1e-10; only a few calls per fit)."""
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _normal_cdf(mid) < p:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def theil_sen(times_s: Sequence[float], values: Sequence[float], *, band_level: float = DEFAULT_BAND_LEVEL,
              max_pairs: int = _MAX_PAIRS, seed: int = 0) -> Trend:
    """Theil–Sen slope of `values` over `times_s` with Sen's confidence band and a Mann–Kendall confidence.

    Pairs with equal times are skipped. With more than `max_pairs` pairs a fixed-seed random subset is used, and
    the band's ranks become the same fractions of that subset.
    """
    import numpy as np

    x = np.asarray(times_s, dtype=float)
    y = np.asarray(values, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ConfigError(f"times ({x.shape}) and values ({y.shape}) must be 1-D sequences of the same length")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ConfigError("times and values must be finite numbers")
    if not 0.0 < band_level < 1.0:
        raise ConfigError(f"band_level {band_level!r} is not between 0 and 1")
    n = int(x.size)
    total_pairs = n * (n - 1) // 2
    if total_pairs <= max_pairs:
        i, j = np.triu_indices(n, k=1)
    else:
        rng = np.random.default_rng(seed)
        i = rng.integers(0, n, size=max_pairs)
        j = rng.integers(0, n, size=max_pairs)
    dx, dy = x[j] - x[i], y[j] - y[i]
    keep = dx != 0
    dx, dy = dx[keep], dy[keep]
    flip = dx < 0
    dx[flip], dy[flip] = -dx[flip], -dy[flip]
    if dx.size == 0:
        raise MeasureError(f"cannot fit a trend over {n} points: need at least 2 at different times")
    slopes = np.sort(dy / dx)
    slope = float(np.median(slopes))
    intercept = float(np.median(y - slope * (x - x[0])))
    # Sen's interval: ranks (N ∓ C)/2 of the N sorted slopes, C = z·sqrt(var S), var S = n(n-1)(2n+5)/18.
    var_s = n * (n - 1) * (2 * n + 5) / 18.0
    z = _normal_quantile(0.5 + band_level / 2.0)
    half_fraction = min(0.5, z * math.sqrt(var_s) / (2.0 * total_pairs))
    low, high = (float(np.quantile(slopes, q)) for q in (0.5 - half_fraction, 0.5 + half_fraction))
    # Mann–Kendall S estimated from the used pairs, scaled to all pairs, with a continuity correction.
    s_stat = float(np.mean(np.sign(dy))) * total_pairs
    z_growth = (s_stat - math.copysign(1.0, s_stat)) / math.sqrt(var_s) if abs(s_stat) > 1.0 else 0.0
    return Trend(slope_bytes_per_s=slope, intercept_bytes=intercept, band_low_bytes_per_s=min(low, slope),
                 band_high_bytes_per_s=max(high, slope), band_level=band_level, confidence=_normal_cdf(z_growth),
                 points=n, samples=n, duration_s=float(x.max() - x.min()), pairs=int(dx.size))


def sawtooth_minima(times_s: Sequence[float], values: Sequence[float]) -> tuple[list[float], list[float], int]:
    """The lowest sample of each stretch between two sawtooth drops: (times, values, number of drops).

    A drop is a fall between successive samples larger than `_DROP_FACTOR` times the median absolute step or half
    the largest fall, whichever is smaller (and larger than `_DROP_FLOOR_BYTES`, page-level jitter); falls in
    successive steps are one drop. The stretch before the first drop is left out when at least `_MIN_POINTS` stretches
    follow it, since the watch may have started half-way up a tooth. Without drops every sample is returned.
    """
    import numpy as np

    t = np.asarray(times_s, dtype=float)
    v = np.asarray(values, dtype=float)
    if t.size < 2:
        return t.tolist(), v.tolist(), 0
    steps = np.diff(v)
    largest_fall = max(0.0, -float(steps.min()))
    threshold = max(min(_DROP_FACTOR * float(np.median(np.abs(steps))), 0.5 * largest_fall), float(_DROP_FLOOR_BYTES))
    falls = np.flatnonzero(steps < -threshold)
    # A drop spread over successive samples (a collection caught half-way) is one drop: keep its last fall.
    falls = falls[np.append(np.diff(falls) > 1, True)] if falls.size else falls
    drops = falls + 1  # index of the first sample after each drop
    if drops.size == 0:
        return t.tolist(), v.tolist(), 0
    bounds = [0, *drops.tolist(), int(t.size)]
    stretches = [(a, b) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
    if len(stretches) > _MIN_POINTS:
        stretches = stretches[1:]
    picks = [a + int(np.argmin(v[a:b])) for a, b in stretches]
    return [float(t[k]) for k in picks], [float(v[k]) for k in picks], int(drops.size)


def fit_trend(times_s: Sequence[float], values: Sequence[float], *,
              band_level: float = DEFAULT_BAND_LEVEL) -> Trend | None:
    """Theil–Sen over the sawtooth minima of a memory series; None with fewer than `_MIN_POINTS` samples."""
    if len(times_s) < _MIN_POINTS:
        return None
    t0 = float(times_s[0])
    rel = [float(t) - t0 for t in times_s]
    mt, mv, drops = sawtooth_minima(rel, values)
    notes: list[str] = []
    if drops and len(mt) < _MIN_POINTS:
        notes.append(f"only {drops} sawtooth drop(s) seen; fitted over all samples: watch for longer")
        mt, mv = rel, [float(v) for v in values]
    elif drops:
        notes.append(f"fitted over the minima of {len(mt)} sawtooth cycles ({drops} drops)")
    trend = theil_sen(mt, mv, band_level=band_level)
    return replace(trend, samples=len(rel), duration_s=rel[-1] - rel[0], notes=tuple(notes))
