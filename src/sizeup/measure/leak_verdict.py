"""Leak watch, verdict and reporting: stable, leaking or inconclusive from a fitted trend against a threshold;
the result of a watch with its trends; and the plot of memory with the fitted line and band.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from sizeup.errors import ConfigError, MeasureError
from sizeup.measure.leak_sampling import Sample
from sizeup.measure.leak_trend import MIN_POINTS as _MIN_POINTS
from sizeup.measure.leak_trend import Trend, fit_trend, sawtooth_minima
from sizeup.units import MEGA

__all__ = ["DEFAULT_THRESHOLD_BYTES_PER_HOUR", "LeakStatus", "WatchResult", "classify", "verdict",
           "format_mb_per_hour", "watch_result", "plot_trend"]

DEFAULT_THRESHOLD_BYTES_PER_HOUR = 10 * MEGA
"""Growth below 10 MB/hour is called stable."""


class LeakStatus(str, Enum):
    STABLE = "stable"
    LEAKING = "leaking"
    INCONCLUSIVE = "inconclusive"


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
    store_error: str | None = None
    """Why the store stopped taking the watch's samples (it went read-only, its disk filled…), or None: the
    watch itself goes on, and its verdict stands."""

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
            "gpu_verdict": self.gpu_verdict, "store_error": self.store_error,
            "samples": [s.to_dict() for s in self.samples],
        }


def watch_result(*, target: str, pid: int, command: tuple[str, ...] | None, interval_s: float, samples: list[Sample],
            ended: str, threshold_bytes_per_hour: float, run_id: int | None) -> WatchResult:
    times = [s.monotonic_s for s in samples]
    trend = fit_trend(times, [s.memory_bytes for s in samples])
    gpu = [s for s in samples if s.gpu_memory_bytes is not None]
    gpu_trend = fit_trend([s.monotonic_s for s in gpu], [s.gpu_memory_bytes for s in gpu]) if gpu else None
    return WatchResult(target=target, pid=pid, command=command, interval_s=interval_s, samples=tuple(samples),
                       ended=ended, threshold_bytes_per_hour=threshold_bytes_per_hour, trend=trend,
                       gpu_trend=gpu_trend, run_id=run_id)


PLOT_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg")


def check_plot_path(path: str | Path) -> Path:
    """`path` as a plot can be written there, checked before a watch starts (matplotlib present, a known image
    suffix, not a folder, its folder existing and writable); else a ConfigError in one line."""
    import importlib.util
    import os

    out = Path(path).expanduser()
    if out.is_dir():
        raise ConfigError(f"--plot {path}: is a folder, not a file")
    if out.suffix.lower() not in PLOT_SUFFIXES:
        raise ConfigError(f"--plot {path}: expected an image file ending in {', '.join(PLOT_SUFFIXES)}")
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise ConfigError(f"--plot {path}: its folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise ConfigError(f"--plot {path}: cannot write there (permission denied)")
    if importlib.util.find_spec("matplotlib") is None:
        raise ConfigError("--plot needs matplotlib: pip install matplotlib")
    return out


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
