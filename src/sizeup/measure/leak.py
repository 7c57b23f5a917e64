"""Memory-leak watch: sample a process's memory over time and fit a robust growth trend.

This module runs the watch (`watch` for a pid or a command, `LeakWatch` for this process from a thread); its
parts live beside it, one job each: `leak_sampling` (one reading of a process's memory), `leak_trend` (the
Theil–Sen fit over the sawtooth's minima) and `leak_verdict` (stable / leaking / inconclusive, the result, the
plot). Every name is re-exported here.

A leak is growth of the floor of the memory sawtooth; see `leak_trend` for how it is fitted and sourced.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sizeup.errors import ConfigError, MeasureError
from sizeup.measure.leak_sampling import Sample, _process, sample_process
from sizeup.measure.leak_trend import DEFAULT_BAND_LEVEL, Trend, fit_trend, sawtooth_minima, theil_sen
from sizeup.measure.leak_verdict import (DEFAULT_THRESHOLD_BYTES_PER_HOUR, LeakStatus, WatchResult, classify,
                                         format_mb_per_hour, plot_trend, verdict)
from sizeup.measure.leak_verdict import watch_result as _result

if TYPE_CHECKING:
    from sizeup.store import RunStore as Store

__all__ = [
    "DEFAULT_THRESHOLD_BYTES_PER_HOUR",
    "DEFAULT_BAND_LEVEL",
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
    store_error: list[str] = []

    def saved(write: Callable[[], object]) -> None:
        """A store write that must not end the watch: the first failure is kept, later writes skipped."""
        if store is None or run_id is None or store_error:
            return
        try:
            write()
        except MeasureError as e:
            store_error.append(str(e))

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
            saved(lambda: store.add_point(run_id, batch=None, phase="rss", status="ok", throughput_per_s=None,
                                          peak_memory_bytes=sample.memory_bytes,
                                          extra=sample.to_dict() | {"elapsed_s": sample.monotonic_s - t0[0]}))
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
        saved(lambda: store.finish_run(run_id, "interrupted" if isinstance(e, KeyboardInterrupt) else "error",
                                       error=str(e) or type(e).__name__))
        raise
    finally:
        if proc is not None:
            _terminate(proc)
    saved(lambda: store.finish_run(run_id, "interrupted" if result.ended == "interrupted" else "ok"))
    if store_error:
        from dataclasses import replace

        result = replace(result, store_error=store_error[0])
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
