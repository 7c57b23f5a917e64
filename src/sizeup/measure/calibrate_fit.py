"""The calibration fit: one rate factor and the per-op overhead, by weighted least squares over a sweep.

Every measured point j is a model's traced ledger at a batch and its measured time t_j. Priced at unit
efficiency against the measured peaks (and the measured GEMM size curve), op i of point j costs X_ij of
compute and M_ij of memory time, and launches k_ij kernels. The fit's model of the point is

    latency_j = sum_i max(X_ij / c, M_ij) + K_j * o,        K_j = sum_i k_ij,

exactly what `price.roofline.price` computes on a CPU with the profile's efficiencies (compute factor c on
matrix and vector math, memory at the measured copy bandwidth, o seconds per kernel). o enters linearly and
is solved in closed form for every c; c is found by a search over log c. The weights are 1 / t_j (relative
errors). Given the batches, the overhead is fitted to the batch-1 and small-batch points (<= SMALL_BATCH),
where K_j * o is the largest share, together with a rate of their own, and the profile's rate to the large
batches with that overhead held: runtimes pick other kernels at large batches (oneDNN's convolutions on this
CPU run ~3x faster per image at batch 16 than at 8), and one rate over both would push the difference into
the overhead.

The uncertainty of (o, 1/c) is the usual one of a weighted linear least-squares fit, linearised at the
optimum: cov = s^2 (Z^T Z)^-1 with Z_j = (K_j, sum of X_ij over the compute-bound ops) / t_j and s^2 the
relative residual sum of squares over n - 2 degrees of freedom; none with two points.

Load on the machine only adds time, so the fit is given a robust statistic of each point's repetitions
(`point_statistic`: the minimum by default, or a low quantile), not the median.

With a measured floor (measure.floor: the forward on an empty batch, every op dispatched and none computed),
the per-op overhead is not fitted: o = floor / kernels. On this CPU (ResNet-50 at 32x32, one thread) the batch
line's intercept gave ~58 us per kernel where the floor gives ~7 us: the rest of the intercept is the 102 MB of
weights streamed from memory on every forward (the same cost at every batch) and the small batches' slower
convolutions, which the batch line cannot tell from per-op cost. The model then is

    latency_j = sum_i max(X_ij / (c f(s_ij)), M_ij / m) + K_j * o,

with a memory factor m (the weights are read at well under the copy bandwidth while the kernels compute) fitted
with a compute factor to the small batches, the profile's c to the large ones with o and m held, and f the
rate's dependence on an op's size s (matrix FLOPs per kernel): c_small / c at the small batches' typical size,
1 at the large batches', log-linear between (`fitted_size_curve`), in place of the square-GEMM curve.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sizeup.errors import MeasureError
from sizeup.hardware.schema import DeviceSpec
from sizeup.ledger import Ledger
from sizeup.price.efficiency import TENSOR_KINDS, Efficiency
from sizeup.ranges import Range

__all__ = ["SMALL_BATCH", "floor_overhead", "fitted_size_curve", "STATISTICS", "NOISY_SPREAD", "Fit", "fit_profile",
           "fit_rates", "hit_bound", "fit_efficiency", "line_fit", "point_statistic", "spread", "stored_statistic",
           "resolve_statistic"]

STATISTICS = ("min", "p10", "median", "cpu-min")
"""Which statistic of a point's repetition times the fit uses: load only raises times, so the minimum (or a low
quantile) estimates the quiet machine's time; the median keeps the load in; cpu-min is the least thread CPU time
of the repetitions (recorded on the CPU with one torch thread), which other processes' load does not add to at
all while they share the cores — on a quiet machine it equals the wall time."""
NOISY_SPREAD = 0.10
"""A point whose median is more than this fraction above its minimum was measured on a busy (noisy) machine."""
RATE_BOUNDS = (1e-3, 1.5)
MEMORY_BOUNDS = (0.02, 1.5)
"""The memory factor searched (fits with a measured floor), against the measured copy bandwidth."""
"""The compute factor searched, against the measured GEMM rate: well beyond 1.5 x the measured peak is not
physical; below 1/1000 is a fit gone wrong."""


SMALL_BATCH = 8
"""Batches up to this size pin the per-op overhead (and the fixed cost compare measures); larger ones the rate."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Fit:
    """A fitted calibration: the efficiencies by profile key, and how well and how surely they were fitted."""

    values: dict[str, float]
    """tensor_matmul, tensor_conv, tensor_attention, vector (all the one compute factor), memory (1.0: the
    measured copy bandwidth), overhead_s (seconds per kernel)."""
    residual_median: float
    """Median |predicted / measured - 1| over the points, with `values`."""
    overhead_stderr_s: float | None
    """Standard error of overhead_s; None with too few points."""
    compute_stderr: float | None
    """Standard error of the compute factor; None with too few points."""
    points: int
    overhead_source: str = "fitted"
    """"measured" (from the floors of the forward on an empty batch) or "fitted" (the batch line's intercept)."""
    size_curve: tuple[tuple[float, float], ...] | None = None
    """(FLOPs per kernel, fraction of the compute factor) fitted from the small and large batches (with a measured
    floor); None: the profile keeps the micro-benchmarks' GEMM curve."""
    small_batch_compute: float | None = None
    """The compute factor fitted with the overhead to the small batches, where it differs from the large
    batches' (the runtime picks other kernels there); None when one fit covered every point."""
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"values": dict(self.values), "residual_median": self.residual_median,
                "overhead_stderr_s": self.overhead_stderr_s, "compute_stderr": self.compute_stderr,
                "points": self.points, "overhead_source": self.overhead_source,
                "size_curve": None if self.size_curve is None else [list(k) for k in self.size_curve], "small_batch_compute": self.small_batch_compute, "notes": list(self.notes)}


def _unit_parts(device: DeviceSpec, ledger: Ledger, curve: tuple[tuple[float, float], ...]):
    """(compute time per op, memory time per op, kernels) at unit efficiencies and no overhead."""
    from sizeup.price.roofline import price

    one, zero = Range(1.0, 1.0, 1.0), Range(0.0, 0.0, 0.0)
    unit = Efficiency(tensor={k: one for k in TENSOR_KINDS}, vector=one, memory=one, overhead_s=zero,
                      origin="unit efficiencies (calibration fit)", size_curve=curve)
    roof = price(ledger, device, unit)
    return np.array(roof.compute, dtype=float), np.array(roof.memory, dtype=float), float(roof.arrays.launches.sum())


def _op_size(ledger: Ledger) -> tuple[float, float]:
    """(matrix FLOPs per kernel, their FLOP-weighted geometric mean over the ledger's matrix ops, in log) and
    the matrix FLOPs: the typical size of the ledger's convolutions and matrix products."""
    from sizeup.price.roofline import LedgerArrays

    a = LedgerArrays.from_ledger(ledger)
    tensor = a.tensor_flops > 0
    if not tensor.any():
        return 0.0, 0.0
    size = a.tensor_flops[tensor] / np.maximum(a.launches[tensor], 1)
    weight = a.tensor_flops[tensor]
    return float((weight * np.log(size)).sum() / weight.sum()), float(weight.sum())


def fitted_size_curve(small: Sequence[Ledger], large: Sequence[Ledger], c_small: float,
                      c_large: float) -> tuple[tuple[float, float], ...] | None:
    """The rate as a function of an op's size, from the two regimes: the small batches' convolutions and matrix
    products (their FLOP-weighted typical FLOPs per kernel) at c_small / c_large of the large batches', those of
    the large batches at 1, log-linear between (the roofline interpolates the curve so) and flat outside. None
    when the small batches are not slower (by 5%), or not smaller."""
    if c_small >= 0.95 * c_large:  # within the grid's resolution and the noise: one rate
        return None

    def typical(ledgers) -> float:
        sizes = [_op_size(led) for led in ledgers]
        total = sum(w for _, w in sizes)
        return math.exp(sum(s * w for s, w in sizes) / total) if total else 0.0

    lo, hi = typical(small), typical(large)
    if not (0 < lo < hi):
        return None
    return ((lo, c_small / c_large), (hi, 1.0))


@dataclass(slots=True)
class _Points:
    compute: list[np.ndarray]
    memory: list[np.ndarray]
    kernels: np.ndarray
    t: np.ndarray

    def take(self, index: Sequence[int]) -> _Points:
        return _Points([self.compute[i] for i in index], [self.memory[i] for i in index], self.kernels[list(index)],
                       self.t[list(index)])

    def work(self, c: np.ndarray) -> np.ndarray:
        """sum_i max(X_ij / c, M_ij) per point (rows) and candidate factor (columns)."""
        return np.array([np.maximum(x[:, None] / c[None, :], m[:, None]).sum(axis=0)
                         for x, m in zip(self.compute, self.memory)])

    def bound(self, c: float) -> np.ndarray:
        """d latency / d(1/c) per point: the unit compute time of its compute-bound ops."""
        return np.array([x[x / c >= m].sum() for x, m in zip(self.compute, self.memory)])


def _best_overhead(work: np.ndarray, kernels: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The weighted least-squares o >= 0 for each candidate (columns of `work`), relative weights 1/t."""
    z = kernels / t
    r = (t[:, None] - work) / t[:, None]
    o = (z[:, None] * r).sum(axis=0) / max(float((z * z).sum()), 1e-300)
    return np.maximum(o, 0.0)


def _search(pts: _Points, overhead: float | None) -> tuple[float, float]:
    """(c, o) minimising the relative squared error: o solved for each c (or held at `overhead`), c searched
    on a log grid and refined between the best point's neighbours."""
    def loss(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        work = pts.work(c)
        if overhead is not None:
            o = np.full(len(c), overhead)
        else:
            o = _best_overhead(work, pts.kernels, pts.t) if pts.kernels.any() else np.zeros(len(c))
        pred = work + pts.kernels[:, None] * o[None, :]
        return (((pred - pts.t[:, None]) / pts.t[:, None]) ** 2).sum(axis=0), o

    lo, hi = np.log(RATE_BOUNDS[0]), np.log(RATE_BOUNDS[1])
    grid = np.exp(np.linspace(lo, hi, 241))
    best = int(np.argmin(loss(grid)[0]))
    step = (hi - lo) / 240
    fine = np.exp(np.linspace(np.log(grid[best]) - step, np.log(grid[best]) + step, 201).clip(lo, hi))
    values, overheads = loss(fine)
    k = int(np.argmin(values))
    return float(fine[k]), float(overheads[k])


def _stderr(pts: _Points, c: float, o: float, with_overhead: bool) -> tuple[float | None, float | None]:
    """Standard errors of (o, c) from the linearised weighted least squares; (None, None) without dof."""
    params = 2 if with_overhead else 1
    n = len(pts.t)
    if n <= params:
        return None, None
    residuals = (pts.work(np.array([c]))[:, 0] + pts.kernels * o - pts.t) / pts.t
    columns = ([pts.kernels / pts.t] if with_overhead else []) + [pts.bound(c) / pts.t]
    z = np.stack(columns, axis=1)
    cov = float((residuals ** 2).sum()) / (n - params) * np.linalg.pinv(z.T @ z)
    c_se = math.sqrt(max(cov[-1, -1], 0.0)) * c * c  # d(c) = c^2 d(1/c)
    return (math.sqrt(max(cov[0, 0], 0.0)) if with_overhead else None), c_se


def floor_overhead(floors: Sequence[tuple[float, float]]) -> tuple[float, float | None]:
    """(seconds per kernel, its standard error) from measured floors: (kernels, seconds of the forward on an empty
    batch) per run; the relative least-squares o of K o = t (one run: t / K, no error)."""
    k = np.array([float(f[0]) for f in floors])
    t = np.array([float(f[1]) for f in floors])
    z = k / t
    o = float(z.sum() / (z * z).sum())
    if len(t) < 2:
        return o, None
    r = (k * o - t) / t
    return o, math.sqrt(float((r ** 2).sum()) / (len(t) - 1) / float((z * z).sum()))


def _search_rates(pts: _Points, overhead: float) -> tuple[float, float]:
    """(c, m): the compute and memory factors minimising the relative squared error with the overhead held: for
    each memory factor on a log grid, the best compute factor (`_search`); then a golden-section search of the
    memory factor between the best grid point's neighbours."""
    def at(log_m: float) -> tuple[float, float]:
        scaled = _scaled(pts, math.exp(log_m))
        c, _ = _search(scaled, overhead)
        pred = scaled.work(np.array([c]))[:, 0] + pts.kernels * overhead
        return float((((pred - pts.t) / pts.t) ** 2).sum()), c

    grid = np.linspace(np.log(MEMORY_BOUNDS[0]), np.log(MEMORY_BOUNDS[1]), 41)
    losses = [at(g)[0] for g in grid]
    i = int(np.argmin(losses))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(40):
        a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        if at(a)[0] <= at(b)[0]:
            hi = b
        else:
            lo = a
    log_m = (lo + hi) / 2
    return at(log_m)[1], math.exp(log_m)


def _scaled(pts: _Points, m: float) -> _Points:
    """The points with memory time at factor m (so that the one-factor search prices bytes at m x bandwidth)."""
    return _Points(pts.compute, [mem / m for mem in pts.memory], pts.kernels, pts.t)


def fit_profile(device: DeviceSpec, observations: Sequence[tuple[Ledger, float]],
                curve: tuple[tuple[float, float], ...] = (), batches: Sequence[int] | None = None,
                floors: Sequence[tuple[float, float]] = ()) -> Fit:
    """Fit the compute factor and the per-op overhead to measured (ledger, seconds) points (see the module).
    Given each point's batch, the overhead is fitted (with a compute factor of their own) to the points up to
    SMALL_BATCH, and the profile's compute factor to the larger ones with that overhead held, when there are
    at least two small and one large; otherwise one fit covers every point.

    Given `floors` ((kernels, seconds) of the forward on an empty batch, measure.floor), the per-op overhead is
    measured, not fitted: o = floor / kernels; the small batches then fit a compute factor and a memory factor
    (the weights streamed on every forward at batch 1 are memory time the fit would otherwise call overhead),
    and the large batches the profile's compute factor with both held."""
    if len(observations) < 2:
        raise MeasureError(f"calibration needs at least 2 measured points, got {len(observations)}")
    bad = [t for _, t in observations if not (isinstance(t, (int, float)) and math.isfinite(t) and t > 0)]
    if bad:
        raise MeasureError(f"measured time {bad[0]!r}: expected a positive number of seconds")
    if batches is not None and len(batches) != len(observations):
        raise MeasureError(f"{len(batches)} batch sizes for {len(observations)} measured points")
    bad_floor = [f for f in floors if not (f[0] > 0 and math.isfinite(f[1]) and f[1] > 0)]
    if bad_floor:
        raise MeasureError(f"floor {bad_floor[0]!r}: expected (kernels > 0, seconds > 0)")
    split = len(small := [i for i, b in enumerate(batches or ()) if b <= SMALL_BATCH]) >= 2 and \
        any(b > SMALL_BATCH for b in batches or ())
    # with a floor and both regimes, the rate's dependence on op size is fitted (fitted_size_curve), not the GEMM's
    use_curve = () if floors and split else curve
    parts = [_unit_parts(device, ledger, use_curve) for ledger, _ in observations]
    pts = _Points([p[0] for p in parts], [p[1] for p in parts], np.array([p[2] for p in parts]),
                  np.array([float(m) for _, m in observations]))
    notes: list[str] = []
    if not pts.kernels.any():
        notes.append("the ledgers launch no kernels: the per-op overhead is not fitted (0)")
    large = [i for i, b in enumerate(batches or ()) if b > SMALL_BATCH]
    c_small, memory, o_source, size_curve = None, 1.0, "fitted", None
    if floors:
        o, o_se = floor_overhead(floors)
        o_source = "measured"
        fit_on = pts.take(small) if len(small) >= 2 else pts
        c_small, memory = _search_rates(fit_on, o)
        c = c_small
        if split:
            c, _ = _search(_scaled(pts.take(large), memory), o)
            size_curve = fitted_size_curve([observations[i][0] for i in small], [observations[i][0] for i in large],
                                           c_small, c)
        _, c_se = _stderr(_scaled(pts.take(large) if split else pts, memory), c, o, False)
        if memory >= MEMORY_BOUNDS[1] * 0.999 or memory <= MEMORY_BOUNDS[0] * 1.001:
            notes.append(f"the memory factor hit its bound ({memory:.3g}): the points do not pin it")
    elif len(small) >= 2 and large:
        c_small, o = _search(pts.take(small), None)
        o_se, _ = _stderr(pts.take(small), c_small, o, True)
        c, _ = _search(pts.take(large), o)
        _, c_se = _stderr(pts.take(large), c, o, False)
    else:
        c, o = _search(pts, None)
        o_se, c_se = _stderr(pts, c, o, True)
    if not floors:
        notes.append("the per-op overhead is fitted, not measured (no floor: runs from before 'measure' timed the "
                     "forward at batch 0): the batch line does not tell it from the weights read every forward")
    if size_curve is not None:
        notes.append(f"the small batches' convolutions and matrix products (~{size_curve[0][0]:.3g} FLOPs per kernel) "
                     f"run at {size_curve[0][1]:.2f} of the large batches' rate (~{size_curve[1][0]:.3g}): the profile "
                     "prices an op's rate by its size on that fitted curve")
    elif c_small is not None and abs(c / c_small - 1) > 0.25:
        notes.append(f"the small batches (<= {SMALL_BATCH}) run at {c_small:.3g} of the measured rate, the "
                     f"large ones at {c:.3g}: the runtime picks other kernels; the profile keeps the large "
                     "batches' rate, so its small-batch times carry that difference")
    if c >= RATE_BOUNDS[1] * 0.999 or c <= RATE_BOUNDS[0] * 1.001:
        notes.append(f"the compute factor hit its bound ({c:.3g}): the points do not pin the rate")
    if size_curve is not None:  # the residuals of the profile as priced: on its fitted size curve
        priced = [_unit_parts(device, ledger, size_curve) for ledger, _ in observations]
        pts = _Points([p[0] for p in priced], [p[1] for p in priced], pts.kernels, pts.t)
    scaled = _scaled(pts, memory)
    residuals = (scaled.work(np.array([c]))[:, 0] + pts.kernels * o - pts.t) / pts.t
    factor = {f"tensor_{k}": c for k in TENSOR_KINDS}
    return Fit(values={**factor, "vector": c, "memory": memory, "overhead_s": o},
               residual_median=float(np.median(np.abs(residuals))), overhead_stderr_s=o_se, compute_stderr=c_se,
               points=len(pts.t), small_batch_compute=c_small, overhead_source=o_source, size_curve=size_curve,
               notes=tuple(notes))


def fit_rates(device: DeviceSpec, observations: Sequence[tuple[Ledger, float]], overhead_s: float) -> Fit:
    """The compute and memory factors (with the per-op overhead held at `overhead_s`) fitted to measured
    (ledger, seconds) points: an LLM's prefill (compute-bound) pins the compute factor and its decode
    (memory-bound: the weights and the KV cache read every step) the memory factor. Relative least squares,
    as `fit_profile`."""
    if len(observations) < 2:
        raise MeasureError(f"calibration needs at least 2 measured points, got {len(observations)}")
    bad = [t for _, t in observations if not (isinstance(t, (int, float)) and math.isfinite(t) and t > 0)]
    if bad:
        raise MeasureError(f"measured time {bad[0]!r}: expected a positive number of seconds")
    parts = [_unit_parts(device, ledger, ()) for ledger, _ in observations]
    pts = _Points([p[0] for p in parts], [p[1] for p in parts], np.array([p[2] for p in parts]),
                  np.array([float(m) for _, m in observations]))
    c, memory = _search_rates(pts, overhead_s)
    notes = [f"the per-op overhead is held at {overhead_s * 1e6:.3g} us (the engine's, else the device kind's "
             "default: an LLM run has no floor to measure it)"]
    if c >= RATE_BOUNDS[1] * 0.999 or c <= RATE_BOUNDS[0] * 1.001:
        notes.append(f"the compute factor hit its bound ({c:.3g}): the points do not pin the rate")
    if memory >= MEMORY_BOUNDS[1] * 0.999 or memory <= MEMORY_BOUNDS[0] * 1.001:
        notes.append(f"the memory factor hit its bound ({memory:.3g}): the points do not pin it")
    scaled = _scaled(pts, memory)
    _, c_se = _stderr(scaled, c, overhead_s, False)
    residuals = (scaled.work(np.array([c]))[:, 0] + pts.kernels * overhead_s - pts.t) / pts.t
    return Fit(values={**{f"tensor_{k}": c for k in TENSOR_KINDS}, "vector": c, "memory": memory,
                       "overhead_s": overhead_s},
               residual_median=float(np.median(np.abs(residuals))), overhead_stderr_s=None, compute_stderr=c_se,
               points=len(pts.t), overhead_source="default", notes=tuple(notes))


def hit_bound(fit: Fit) -> str | None:
    """Why a fit must not be saved, or None: its compute factor on the lower edge of its search range (1/1000 of
    the measured peak prices every op a thousand times too slow) or its memory factor on the lower edge (every
    byte fifty times too slow): a profile that poisons every estimate it touches. The upper edges (1.5 times the
    measured peaks: a benchmark run on a busy machine, bytes served from caches) stay notes of the fit: they
    price at most 1.5 times too fast."""
    c, m = fit.values["vector"], fit.values["memory"]
    if c <= RATE_BOUNDS[0] * 1.001:
        return f"the compute factor hit its lower bound ({c:.3g} of the measured peak): the points do not pin the rate"
    if m <= MEMORY_BOUNDS[0] * 1.001:
        return f"the memory factor hit its lower bound ({m:.3g}): the points do not pin it"
    return None


def fit_efficiency(device: DeviceSpec, observations: Sequence[tuple[Ledger, float]],
                   curve: tuple[tuple[float, float], ...] = (),
                   batches: Sequence[int] | None = None) -> tuple[dict[str, float], float]:
    """The fitted efficiencies by profile key and the median relative error of the fit (`fit_profile`)."""
    fit = fit_profile(device, observations, curve, batches)
    return fit.values, fit.residual_median


def line_fit(points: Sequence[tuple[float, float]], *,
             relative: bool = False) -> tuple[float, float, float | None] | None:
    """(intercept, slope, standard error of the intercept) of the least-squares line through (x, y) points —
    with `relative`, weighted by 1 / y^2 (relative errors, as the calibration fit weighs its points); the error is
    None with two points; None with fewer than two distinct x."""
    xs = np.array([float(x) for x, _ in points])
    ys = np.array([float(y) for _, y in points])
    if len(set(xs.tolist())) < 2:
        return None
    w = 1.0 / np.abs(ys) if relative else np.ones_like(ys)
    design = np.stack([np.ones_like(xs), xs], axis=1) * w[:, None]
    (intercept, slope), *_ = np.linalg.lstsq(design, ys * w, rcond=None)
    n = len(xs)
    if n < 3:
        return float(intercept), float(slope), None
    residuals = (ys - (intercept + slope * xs)) * w
    cov = float((residuals ** 2).sum()) / (n - 2) * np.linalg.inv(design.T @ design)
    return float(intercept), float(slope), math.sqrt(max(cov[0, 0], 0.0))


def point_statistic(samples_s: Sequence[float], statistic: str) -> float | None:
    """The `statistic` (one of STATISTICS) of a point's repetition times; None when there are none."""
    if statistic not in STATISTICS:
        raise MeasureError(f"statistic {statistic!r}: expected one of {', '.join(STATISTICS)}")
    if not samples_s:
        return None
    values = np.asarray(samples_s, dtype=float)
    return float({"min": values.min(), "cpu-min": values.min(), "p10": np.percentile(values, 10),
                  "median": np.median(values)}[statistic])


def spread(minimum: float | None, median: float | None) -> float | None:
    """median / minimum - 1: how much the load raised a point's typical repetition over its quietest."""
    if not minimum or median is None or minimum <= 0:
        return None
    return median / minimum - 1


def stored_statistic(store, point, statistic: str) -> float | None:
    """The `statistic` of a stored point (a `PointRecord`): min and median from its summary columns (kept
    since the first schema version), p10 from its stored repetition times, cpu-min from their CPU times (None
    where none were recorded)."""
    if statistic not in STATISTICS:
        raise MeasureError(f"statistic {statistic!r}: expected one of {', '.join(STATISTICS)}")
    if statistic == "min":
        return point.latency_min_s
    if statistic == "median":
        return point.latency_p50_s
    if statistic == "cpu-min":
        return point_statistic(store.cpu_samples(point.id), statistic)
    return point_statistic(store.samples(point.id), statistic)


def resolve_statistic(store, points, statistic: str) -> str:
    """`statistic`, or for "auto": cpu-min where every point recorded CPU times (one torch thread), else min."""
    if statistic != "auto":
        return statistic
    ok = [p for p in points if p.status == "ok"]
    return "cpu-min" if ok and all(store.cpu_samples(p.id) for p in ok) else "min"
