"""Memory-leak watch: sample a process's memory over time and fit a robust growth trend.

A process's resident memory is a sawtooth: the garbage collector, an allocator's cache or a per-request buffer
grows it and then drops it back. A leak is growth of the sawtooth's *floor*, so the trend is fitted over the
sawtooth's minima (the lowest sample between two drops), not over every sample: a sawtooth without growth is flat.

The fit is Theil–Sen (Sen 1968, "Estimates of the regression coefficient based on Kendall's tau", JASA 63:1379):
the slope is the median of the slopes of all pairs of points (a random subset of pairs when there are many), and
its band is Sen's rank confidence interval from the same pairwise slopes at the Kendall-tau variance
n(n-1)(2n+5)/18. The confidence that memory grows is the one-sided Mann–Kendall test on the same pairs. Both
assume independent points; the minima of successive sawtooth cycles are close to that, raw samples are not.

Sampling reads RSS with psutil, optionally a process's GPU memory via NVML (`pynvml` from `nvidia-ml-py`,
imported lazily; absent or unreadable gives None) and, when watching this very process, the torch CUDA
allocator's counters if torch is already imported and CUDA is initialized.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from sizeup.errors import ConfigError, MeasureError
from sizeup.units import KIB, MEGA, parse_duration_s

if TYPE_CHECKING:
    from sizeup.measure.store import Store

__all__ = [
    "DEFAULT_THRESHOLD_BYTES_PER_HOUR",
    "LeakStatus",
    "Sample",
    "Trend",
    "WatchResult",
    "LeakWatch",
    "sample_process",
    "sawtooth_minima",
    "theil_sen",
    "fit_trend",
    "classify",
    "verdict",
    "format_mb_per_hour",
    "watch",
    "plot_trend",
]

_S_PER_HOUR = parse_duration_s("1h")
DEFAULT_THRESHOLD_BYTES_PER_HOUR = 10 * MEGA
"""Growth below 10 MB/hour is called stable."""
DEFAULT_BAND_LEVEL = 0.8
"""Two-sided level of the slope band: 0.8 is the 10th to the 90th percentile."""
_MAX_PAIRS = 200_000
_MIN_POINTS = 3
_DROP_FLOOR_BYTES = 64 * KIB
"""A fall smaller than this is page-level jitter, never a sawtooth drop."""
_DROP_FACTOR = 4.0
"""A fall counts as a sawtooth drop when larger than this many times the median absolute step."""


class LeakStatus(str, Enum):
    STABLE = "stable"
    LEAKING = "leaking"
    INCONCLUSIVE = "inconclusive"


# ---- sampling ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Sample:
    """One reading of a process's memory."""

    unix_time_s: float
    """Wall-clock time of the reading (seconds since the epoch)."""
    monotonic_s: float
    """`time.monotonic()` at the reading; trends are fitted on differences of this clock."""
    pid: int
    rss_bytes: int
    """Resident set size of the process itself."""
    children_rss_bytes: int | None = None
    """Summed RSS of all its descendants; None when children were not asked for."""
    gpu_memory_bytes: int | None = None
    """GPU memory NVML attributes to the process (and its descendants when asked); None when unreadable."""
    torch_allocated_bytes: int | None = None
    """`torch.cuda.memory_allocated` summed over devices; only for this process with CUDA initialized."""
    torch_reserved_bytes: int | None = None
    """`torch.cuda.memory_reserved` summed over devices, as above."""

    def __post_init__(self) -> None:
        if self.rss_bytes < 0:
            raise ConfigError(f"rss_bytes {self.rss_bytes!r} is not a byte count >= 0")

    @property
    def memory_bytes(self) -> int:
        """RSS of the process plus its children's when they were sampled: the series the trend is fitted on."""
        return self.rss_bytes + (self.children_rss_bytes or 0)

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)} | {"memory_bytes": self.memory_bytes}


def _process(pid: int):
    import psutil

    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess as e:
        raise MeasureError(f"no process with pid {pid}") from e
    except psutil.AccessDenied as e:
        raise MeasureError(f"no permission to read process {pid}") from e


def _gpu_memory_bytes(pids: set[int]) -> int | None:
    """GPU memory NVML reports for `pids` over all devices; None when NVML or its per-process counters are absent."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # no driver, no device: no GPU reading, never an error
        return None
    try:
        import psutil

        total, seen, listed = 0, False, set()
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            for getter in (pynvml.nvmlDeviceGetComputeRunningProcesses,
                           pynvml.nvmlDeviceGetGraphicsRunningProcesses):
                try:
                    processes = getter(handle)
                except pynvml.NVMLError:
                    continue
                for proc in processes:
                    listed.add(proc.pid)
                    if proc.pid in pids and proc.usedGpuMemory is not None:
                        total += int(proc.usedGpuMemory)
                        seen = True
        if seen:
            return total
        # Not listed: no GPU memory, unless NVML lists PIDs this namespace cannot see (a container): unknown.
        return None if any(not psutil.pid_exists(p) for p in listed) else 0
    except Exception:  # an NVML call that fails mid-way: no GPU reading, never an error
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def _torch_counters() -> tuple[int | None, int | None]:
    torch = sys.modules.get("torch")
    if torch is None:
        return None, None
    try:
        if not (torch.cuda.is_available() and torch.cuda.is_initialized()):
            return None, None
        devices = range(torch.cuda.device_count())
        return (sum(int(torch.cuda.memory_allocated(d)) for d in devices),
                sum(int(torch.cuda.memory_reserved(d)) for d in devices))
    except Exception:  # a half-initialized CUDA must not stop a watch
        return None, None


def sample_process(pid: int, *, children: bool = False, gpu: bool = False) -> Sample:
    """Read a process's memory now; `MeasureError` when there is no process `pid` (or it just exited)."""
    import psutil

    proc = _process(pid)
    unix_time_s, monotonic_s = time.time(), time.monotonic()
    try:
        rss_bytes = int(proc.memory_info().rss)
        kids = proc.children(recursive=True) if children else []
    except psutil.NoSuchProcess as e:
        raise MeasureError(f"no process with pid {pid}") from e
    except psutil.AccessDenied as e:
        raise MeasureError(f"no permission to read process {pid}") from e
    children_rss_bytes = None
    if children:
        children_rss_bytes = 0
        for kid in kids:
            try:
                children_rss_bytes += int(kid.memory_info().rss)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue  # a child that exited between listing and reading holds nothing now
    gpu_memory_bytes = _gpu_memory_bytes({pid, *(k.pid for k in kids)}) if gpu else None
    allocated, reserved = _torch_counters() if pid == os.getpid() else (None, None)
    return Sample(unix_time_s=unix_time_s, monotonic_s=monotonic_s, pid=pid, rss_bytes=rss_bytes,
                  children_rss_bytes=children_rss_bytes, gpu_memory_bytes=gpu_memory_bytes,
                  torch_allocated_bytes=allocated, torch_reserved_bytes=reserved)


# ---- trend fitting -------------------------------------------------------------------------------------------


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


def classify(trend: Trend | None, threshold_bytes_per_hour: float = DEFAULT_THRESHOLD_BYTES_PER_HOUR) -> LeakStatus:
    """Leaking: the slope is above the threshold and its band excludes 0. Stable: the slope is at most the
    threshold. Inconclusive: no trend (too few samples), or a slope above the threshold whose band includes 0."""
    if trend is None:
        return LeakStatus.INCONCLUSIVE
    if trend.slope_bytes_per_hour <= threshold_bytes_per_hour:
        return LeakStatus.STABLE
    if trend.band_low_bytes_per_s > 0.0:
        return LeakStatus.LEAKING
    return LeakStatus.INCONCLUSIVE


def format_mb_per_hour(bytes_per_hour: float, *, sign: bool = False) -> str:
    """A byte rate per hour in MB (10**6 bytes): 3.02e9 -> "3,020", 1.5e6 -> "1.5"; `sign` adds "+" to growth."""
    value = bytes_per_hour / MEGA
    plus = "+" if sign else ""
    return f"{value:{plus},.0f}" if abs(value) >= 100 else f"{value:{plus}.3g}"


def verdict(trend: Trend | None, threshold_bytes_per_hour: float = DEFAULT_THRESHOLD_BYTES_PER_HOUR) -> str:
    """"stable", "leaking at X MB/hour (confidence P%; ...)" or "inconclusive: ..." (MB = 10**6 bytes)."""
    status = classify(trend, threshold_bytes_per_hour)
    if status is LeakStatus.STABLE:
        return "stable"
    if trend is None:
        return f"inconclusive: fewer than {_MIN_POINTS} samples"
    low, high = trend.band_bytes_per_hour
    band = f"{trend.band_level:.0%} band {format_mb_per_hour(low)} to {format_mb_per_hour(high)} MB/hour"
    if status is LeakStatus.LEAKING:
        return (f"leaking at {format_mb_per_hour(trend.slope_bytes_per_hour)} MB/hour "
                f"(confidence {trend.confidence:.1%}; {band})")
    return (f"inconclusive: {format_mb_per_hour(trend.slope_bytes_per_hour)} MB/hour but the {band} includes 0; "
            "watch for longer")


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchResult:
    """What a watch sampled, why it ended, and the fitted trends."""

    target: str
    """The pid or the command watched, as text."""
    pid: int
    command: tuple[str, ...] | None
    interval_s: float
    samples: tuple[Sample, ...]
    ended: str
    """"duration", "exited" (the process ended), "interrupted" (Ctrl-C) or "stopped" (a `LeakWatch` closed)."""
    threshold_bytes_per_hour: float = DEFAULT_THRESHOLD_BYTES_PER_HOUR
    trend: Trend | None = None
    """Trend of `Sample.memory_bytes` (RSS, plus children's when sampled)."""
    gpu_trend: Trend | None = None
    """Trend of the GPU memory, when at least `_MIN_POINTS` samples had it."""
    run_id: int | None = None
    """The run in the store, when one was given."""

    @property
    def status(self) -> LeakStatus:
        return classify(self.trend, self.threshold_bytes_per_hour)

    @property
    def verdict(self) -> str:
        return verdict(self.trend, self.threshold_bytes_per_hour)

    @property
    def gpu_verdict(self) -> str | None:
        return None if self.gpu_trend is None else verdict(self.gpu_trend, self.threshold_bytes_per_hour)

    def to_dict(self) -> dict:
        return {
            "target": self.target, "pid": self.pid, "command": None if self.command is None else list(self.command),
            "interval_s": self.interval_s, "ended": self.ended, "run_id": self.run_id,
            "threshold_bytes_per_hour": self.threshold_bytes_per_hour, "status": self.status.value,
            "verdict": self.verdict, "sample_count": len(self.samples),
            "trend": None if self.trend is None else self.trend.to_dict(),
            "gpu_trend": None if self.gpu_trend is None else self.gpu_trend.to_dict(),
            "gpu_verdict": self.gpu_verdict, "samples": [s.to_dict() for s in self.samples],
        }


def _result(*, target: str, pid: int, command: tuple[str, ...] | None, interval_s: float, samples: list[Sample],
            ended: str, threshold_bytes_per_hour: float, run_id: int | None) -> WatchResult:
    times = [s.monotonic_s for s in samples]
    trend = fit_trend(times, [s.memory_bytes for s in samples])
    gpu = [s for s in samples if s.gpu_memory_bytes is not None]
    gpu_trend = fit_trend([s.monotonic_s for s in gpu], [s.gpu_memory_bytes for s in gpu]) if gpu else None
    return WatchResult(target=target, pid=pid, command=command, interval_s=interval_s, samples=tuple(samples),
                       ended=ended, threshold_bytes_per_hour=threshold_bytes_per_hour, trend=trend,
                       gpu_trend=gpu_trend, run_id=run_id)


# ---- watching ------------------------------------------------------------------------------------------------


def _check_seconds(value: float | None, what: str, *, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{what} {value!r} is not a positive number of seconds")


@dataclass(slots=True, kw_only=True)
class _Sampler:
    """The sampling loop shared by `watch` and `LeakWatch`: ticks at start + k·interval until a stop condition."""

    pid: int
    interval_s: float
    duration_s: float | None
    children: bool = False
    gpu: bool = False
    alive: Callable[[], bool] = lambda: True
    on_sample: Callable[[Sample], None] | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    samples: list[Sample] = field(default_factory=list)
    ended: str = "duration"

    def run(self) -> None:
        start = time.monotonic()
        k = 0
        while True:
            if not self.alive():
                self.ended = "exited"
                return
            try:
                sample = sample_process(self.pid, children=self.children, gpu=self.gpu)
            except MeasureError:
                if self.samples:  # the process went away between two samples
                    self.ended = "exited"
                    return
                raise
            self.samples.append(sample)
            if self.on_sample is not None:
                self.on_sample(sample)
            k += 1
            next_at = start + k * self.interval_s
            if self.duration_s is not None and next_at - start > self.duration_s + 1e-9:
                self.ended = "duration"
                return
            # Wait in short slices so that an exiting process is noticed within a fraction of the interval.
            while (wait := next_at - time.monotonic()) > 0:
                if self.stop.wait(min(wait, 0.25)):
                    self.ended = "stopped"
                    return
                if not self.alive():
                    self.ended = "exited"
                    return


def _terminate(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5.0)


def watch(pid: int | None = None, command: Sequence[str] | None = None, *, interval_s: float = 10.0,
          duration_s: float = 3600.0, store: Store | None = None, gpu: bool = False, children: bool = False,
          threshold_bytes_per_hour: float = DEFAULT_THRESHOLD_BYTES_PER_HOUR,
          on_sample: Callable[[Sample], None] | None = None, stdout: int | None = None) -> WatchResult:
    """Sample a process (`pid`) or a command it starts (`command`, terminated at the end) every `interval_s`.

    Stops by itself after `duration_s` or when the process exits; Ctrl-C stops it too and keeps what was sampled
    (`ended` says which). With a `store`, a "watch" run gets one point per sample (phase "rss",
    `peak_memory_bytes` the sample's memory, `extra` the whole sample) as it is taken. `stdout` is passed to the
    command's `subprocess.Popen` (e.g. 2 to send its output to stderr).
    """
    if (pid is None) == (command is None or len(command) == 0):
        raise ConfigError("give a pid or a command to watch, not both and not neither")
    _check_seconds(interval_s, "interval")
    _check_seconds(duration_s, "duration")
    if not isinstance(threshold_bytes_per_hour, (int, float)) or not threshold_bytes_per_hour >= 0:
        raise ConfigError(f"threshold {threshold_bytes_per_hour!r} is not a byte rate >= 0")
    proc: subprocess.Popen | None = None
    argv: tuple[str, ...] | None = None
    if command is not None and len(command) > 0:
        argv = tuple(str(a) for a in command)
        try:
            proc = subprocess.Popen(argv, stdout=stdout)
        except OSError as e:
            raise MeasureError(f"cannot start {argv[0]!r}: {e.strerror or e}") from e
        pid = proc.pid
        target = " ".join(argv)
        alive = lambda: proc.poll() is None  # noqa: E731
    else:
        if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
            raise ConfigError(f"pid {pid!r} is not a positive integer")
        handle = _process(pid)
        target = f"pid {pid}"
        try:
            target = f"pid {pid} ({' '.join(handle.cmdline()) or handle.name()})"
        except Exception:  # a name is decoration; an unreadable one must not stop the watch
            pass
        alive = lambda: handle.is_running() and handle.status() != "zombie"  # noqa: E731
    sampler = _Sampler(pid=pid, interval_s=float(interval_s), duration_s=float(duration_s), children=children,
                       gpu=gpu, alive=_guarded(alive))
    run_id: int | None = None
    try:
        if store is not None:
            import platform

            run_id = store.start_run(
                kind="watch", target=target, device="cpu+gpu" if gpu else "cpu",
                config={"pid": pid, "command": None if argv is None else list(argv), "interval_s": interval_s,
                        "duration_s": duration_s, "gpu": gpu, "children": children,
                        "threshold_bytes_per_hour": threshold_bytes_per_hour},
                environment={"python": sys.version.split()[0], "platform": platform.platform(),
                             "cpu_count": os.cpu_count(), "watcher_pid": os.getpid()})
        t0: list[float] = []

        def record(sample: Sample) -> None:
            if not t0:
                t0.append(sample.monotonic_s)
            if store is not None and run_id is not None:
                store.add_point(run_id, batch=None, phase="rss", status="ok", throughput_per_s=None,
                                peak_memory_bytes=sample.memory_bytes,
                                extra=sample.to_dict() | {"elapsed_s": sample.monotonic_s - t0[0]})
            if on_sample is not None:
                on_sample(sample)

        sampler.on_sample = record
        try:
            sampler.run()
        except KeyboardInterrupt:
            sampler.ended = "interrupted"
        result = _result(target=target, pid=pid, command=argv, interval_s=float(interval_s),
                         samples=sampler.samples, ended=sampler.ended,
                         threshold_bytes_per_hour=float(threshold_bytes_per_hour), run_id=run_id)
    except BaseException as e:
        if store is not None and run_id is not None:
            store.finish_run(run_id, "interrupted" if isinstance(e, KeyboardInterrupt) else "error",
                             error=str(e) or type(e).__name__)
        raise
    finally:
        if proc is not None:
            _terminate(proc)
    if store is not None and run_id is not None:
        store.finish_run(run_id, "interrupted" if result.ended == "interrupted" else "ok")
    return result


def _guarded(alive: Callable[[], bool]) -> Callable[[], bool]:
    import psutil

    def check() -> bool:
        try:
            return bool(alive())
        except psutil.Error:
            return False

    return check


class LeakWatch:
    """Watch this process from a background thread while a service loop runs:

        with LeakWatch(interval_s=5.0) as leak:
            serve_forever()
        print(leak.result().verdict)

    `result()` may also be called while the watch runs, for the trend so far. The thread is a daemon and stops on
    exit from the block (or `stop()`), or after `max_duration_s` when given.
    """

    def __init__(self, interval_s: float = 1.0, *, max_duration_s: float | None = None, children: bool = False,
                 gpu: bool = False, threshold_bytes_per_hour: float = DEFAULT_THRESHOLD_BYTES_PER_HOUR,
                 on_sample: Callable[[Sample], None] | None = None) -> None:
        _check_seconds(interval_s, "interval")
        _check_seconds(max_duration_s, "max_duration", allow_none=True)
        self.threshold_bytes_per_hour = float(threshold_bytes_per_hour)
        self._sampler = _Sampler(pid=os.getpid(), interval_s=float(interval_s), duration_s=max_duration_s,
                                 children=children, gpu=gpu, on_sample=on_sample)
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def _run(self) -> None:
        try:
            self._sampler.run()
        except BaseException as e:  # reported by result(), never lost in the thread
            self._error = e

    def start(self) -> LeakWatch:
        if self._thread is not None:
            raise MeasureError("this LeakWatch has already been started")
        self._thread = threading.Thread(target=self._run, name="sizeup-leakwatch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._sampler.stop.set()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> LeakWatch:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def samples(self) -> tuple[Sample, ...]:
        return tuple(self._sampler.samples)

    def result(self) -> WatchResult:
        if self._error is not None:
            raise MeasureError(f"the leak watch failed: {self._error}") from self._error
        running = self._thread is not None and self._thread.is_alive()
        return _result(target=f"pid {self._sampler.pid} (this process)", pid=self._sampler.pid, command=None,
                       interval_s=self._sampler.interval_s, samples=list(self._sampler.samples),
                       ended="running" if running else self._sampler.ended,
                       threshold_bytes_per_hour=self.threshold_bytes_per_hour, run_id=None)


# ---- plotting ------------------------------------------------------------------------------------------------


def plot_trend(result: WatchResult, path: str | Path) -> Path:
    """Memory over time with the sawtooth minima and the fitted line and band; written as an image to `path`."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ConfigError("plotting needs matplotlib: pip install matplotlib") from e
    if not result.samples:
        raise MeasureError("nothing to plot: the watch took no samples")
    out = Path(path).expanduser()
    t0 = result.samples[0].monotonic_s
    minutes = [(s.monotonic_s - t0) / 60.0 for s in result.samples]
    memory_mb = [s.memory_bytes / MEGA for s in result.samples]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    try:
        ax.plot(minutes, memory_mb, lw=1, color="0.5", label="RSS" + (" + children" if any(
            s.children_rss_bytes is not None for s in result.samples) else ""))
        trend = result.trend
        if trend is not None:
            mt, mv, _ = sawtooth_minima([s.monotonic_s - t0 for s in result.samples],
                                        [s.memory_bytes for s in result.samples])
            if len(mt) < len(result.samples):
                ax.plot([t / 60.0 for t in mt], [v / MEGA for v in mv], "o", ms=4, color="C0", label="minima")
            ends = [0.0, trend.duration_s]
            for slope, style, label in ((trend.slope_bytes_per_s, "-", "Theil–Sen fit"),
                                        (trend.band_low_bytes_per_s, ":", f"{trend.band_level:.0%} band"),
                                        (trend.band_high_bytes_per_s, ":", None)):
                ax.plot([e / 60.0 for e in ends], [(trend.intercept_bytes + slope * e) / MEGA for e in ends],
                        style, color="C3", label=label)
        gpu = [(s.monotonic_s - t0, s.gpu_memory_bytes) for s in result.samples if s.gpu_memory_bytes is not None]
        if gpu:
            ax.plot([t / 60.0 for t, _ in gpu], [v / MEGA for _, v in gpu], lw=1, color="C2", label="GPU memory")
        ax.set_xlabel("minutes")
        ax.set_ylabel("MB")
        ax.set_title(f"{result.target[:60]}: {result.verdict}"[:110], fontsize=9)
        ax.legend(loc="best", fontsize=8)
        fig.tight_layout()
        try:
            fig.savefig(out)
        except (OSError, ValueError) as e:
            raise ConfigError(f"cannot write plot {out}: {e}") from e
    finally:
        plt.close(fig)
    return out
