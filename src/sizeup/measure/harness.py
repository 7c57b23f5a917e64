"""Run a real model on the local device and time it: warm-up, device-synchronised timing (CUDA events
on a GPU), repetitions until the median is stable or the point's time budget ends, peak memory, and
out-of-memory or errors caught per point so that a sweep goes on.
"""

from __future__ import annotations

import math
import os
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from sizeup.errors import MeasureError

__all__ = ["TimingPolicy", "PointResult", "resolve_device", "time_callable", "records_cpu_time", "measure_inference",
           "measure_train", "make_inputs", "build_model", "apply_memory_cap", "synchronize"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TimingPolicy:
    warmup: int = 2
    min_repetitions: int = 5
    max_repetitions: int = 100
    point_budget_s: float = 10.0
    tolerance: float = 0.03
    """Stop once the median of the last half of the repetitions is within this fraction of the median of
    all of them."""

    def __post_init__(self) -> None:
        for name in ("warmup", "min_repetitions", "max_repetitions"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < (0 if name == "warmup" else 1):
                raise MeasureError(f"timing policy {name} {value!r}: expected an integer >= "
                                   f"{0 if name == 'warmup' else 1}")
        if self.max_repetitions < self.min_repetitions:
            raise MeasureError(f"timing policy max_repetitions {self.max_repetitions} is below min_repetitions "
                               f"{self.min_repetitions}")
        for name in ("point_budget_s", "tolerance"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise MeasureError(f"timing policy {name} {value!r}: expected a finite number >= 0")


@dataclass(frozen=True, slots=True, kw_only=True)
class PointResult:
    status: str
    """ok | oom | error"""
    samples_s: tuple[float, ...] = ()
    cpu_samples_s: tuple[float, ...] = ()
    """CPU time of the timing thread per repetition, beside `samples_s`, when the device is the CPU and torch
    runs one thread: the time the work really ran, which load from other processes does not add to."""
    peak_memory_bytes: int | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def median_s(self) -> float:
        if not self.samples_s:
            return math.nan
        ordered = sorted(self.samples_s)
        mid = len(ordered) // 2
        return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def resolve_device(name: str) -> torch.device:
    """"cpu", "cuda", "cuda:N" or "mps" — and present on this machine."""
    text = str(name).strip().lower()
    if text == "cpu":
        return torch.device("cpu")
    if text == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise MeasureError("device 'mps' is not available on this machine")
        return torch.device("mps")
    if text == "cuda" or text.startswith("cuda:"):
        index = text.partition(":")[2]
        if index and not index.isdigit():
            raise MeasureError(f"unknown device {name!r}: expected cpu, cuda, cuda:N or mps")
        if not torch.cuda.is_available():
            raise MeasureError(f"device {name!r}: CUDA is not available on this machine")
        if index and int(index) >= torch.cuda.device_count():
            raise MeasureError(f"device {name!r}: only {torch.cuda.device_count()} CUDA device(s)")
        return torch.device(text if index else "cuda:0")
    raise MeasureError(f"unknown device {name!r}: expected cpu, cuda, cuda:N or mps")


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def _is_oom(error: BaseException) -> bool:
    if isinstance(error, (MemoryError, getattr(torch, "OutOfMemoryError", MemoryError))):
        return True
    text = str(error).lower()
    return isinstance(error, RuntimeError) and any(s in text for s in (
        "out of memory", "can't allocate memory", "not enough memory", "cannot allocate memory"))


class _RSSPeak:
    """Peak resident memory of this process above its level at the start (sampled every 2 ms, during one
    untimed run, so that the sampling thread does not disturb the timings)."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
        self.baseline = self.peak = self._rss()

    def _rss(self) -> int:
        try:
            with open("/proc/self/statm") as fh:
                return int(fh.read().split()[1]) * self._page
        except (OSError, ValueError, IndexError):
            return 0

    def _run(self) -> None:
        while not self._stop.wait(0.002):
            self.peak = max(self.peak, self._rss())

    def __enter__(self) -> _RSSPeak:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())

    @property
    def delta(self) -> int:
        return max(self.peak - self.baseline, 0)


def records_cpu_time(device: torch.device) -> bool:
    """Whether a repetition's CPU time is its work's: on the CPU with one torch thread, every op runs on the
    timing thread (with more threads, the work of the others is not in the timing thread's clock)."""
    return device.type == "cpu" and torch.get_num_threads() == 1


def time_callable(fn: Callable[[], Any], device: torch.device, policy: TimingPolicy,
                  cpu_samples: list[float] | None = None) -> list[float]:
    """Warm up, then time `fn` at least `min_repetitions` times, and on until the median is stable,
    `max_repetitions`, or the point's budget ends (which stops only the repetitions past the minimum).
    Given `cpu_samples` (a list to fill) on the CPU, it also records each repetition's thread CPU time."""
    for _ in range(policy.warmup):
        fn()
    synchronize(device)
    samples: list[float] = []
    start = time.perf_counter()
    while len(samples) < policy.max_repetitions:
        if device.type == "cuda":
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(begin.elapsed_time(end) / 1e3)
        else:
            c0, t0 = time.thread_time(), time.perf_counter()
            fn()
            synchronize(device)
            samples.append(time.perf_counter() - t0)
            if cpu_samples is not None:
                cpu_samples.append(time.thread_time() - c0)
        n = len(samples)
        if n >= policy.min_repetitions:
            whole = sorted(samples)[n // 2]
            recent = sorted(samples[n // 2:])[len(samples[n // 2:]) // 2]
            if abs(recent - whole) <= policy.tolerance * whole:
                break
        if time.perf_counter() - start > policy.point_budget_s and n >= policy.min_repetitions:
            break  # the budget bounds the repetitions past the minimum, never the minimum itself
    return samples


def _load_average() -> dict[str, Any]:
    """The machine's 1-minute load average and CPU count as the point ends: how busy it was while timed
    (other processes on the same cores slow a CPU measurement down)."""
    try:
        return {"load_avg_1m": os.getloadavg()[0], "cpu_count": os.cpu_count()}
    except (OSError, AttributeError):
        return {}


def _point(run: Callable[[], Any], device: torch.device, policy: TimingPolicy, profile: bool = False,
           own_threads: bool = False) -> PointResult:
    """Time `run` at one point. `own_threads`: the work runs on threads of its own (ONNX Runtime's pool), so
    the timing thread's CPU time is not the work's and is not recorded."""
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    rss = _RSSPeak()
    cpu: list[float] | None = [] if records_cpu_time(device) and not own_threads else None
    try:
        samples = time_callable(run, device, policy, cpu)
        if device.type != "cuda":  # the memory sampler runs only in one extra, untimed run
            with rss:
                run()
    except Exception as error:  # one point's failure is recorded, the sweep goes on
        if device.type == "cuda":
            torch.cuda.empty_cache()
        if _is_oom(error):
            return PointResult(status="oom", error=f"{type(error).__name__}: {str(error).splitlines()[0][:300]}")
        return PointResult(status="error", error=traceback.format_exc())
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else rss.delta
    extra: dict[str, Any] = {"memory_source": "cuda max_memory_allocated" if device.type == "cuda"
                             else "process RSS above the start of the point", **_load_average()}
    if profile:
        extra["measured_by_kind_s"] = profile_by_kind(run, device)
    return PointResult(status="ok", samples_s=tuple(samples), cpu_samples_s=tuple(cpu or ()),
                       peak_memory_bytes=int(peak), extra=extra)


def make_inputs(specs: Sequence[Any], batch: int, device: torch.device, dtype: torch.dtype) -> tuple[list, dict]:
    """Real inputs for the given specs with the leading dimension replaced by `batch` (float inputs
    random normal, integer inputs random ids below 100)."""
    from sizeup.ingest.torch_trace import torch_dtype

    args, kwargs = [], {}
    for spec in specs:
        shape = (batch, *spec.shape[1:])
        t_dtype = torch_dtype(spec.dtype) if spec.dtype else dtype
        if t_dtype.is_floating_point:
            t = torch.randn(shape, dtype=t_dtype, device=device)
        else:
            t = torch.randint(0, 100, shape, dtype=t_dtype, device=device)
        if spec.name:
            kwargs[spec.name] = t
        else:
            args.append(t)
    return args, kwargs


def build_model(factory: Callable[[], Any], device: torch.device, dtype: torch.dtype) -> torch.nn.Module:
    """The model with real (random) weights on the device."""
    try:
        model = factory()
    except Exception as e:
        raise MeasureError(f"building the model failed: {type(e).__name__}: {e}") from e
    if not isinstance(model, torch.nn.Module):
        raise MeasureError(f"the factory returned {type(model).__name__}, expected a torch.nn.Module")
    return model.to(device=device, dtype=dtype)


def measure_inference(model: torch.nn.Module, specs: Sequence[Any], batch: int, device: torch.device,
                      dtype: torch.dtype, policy: TimingPolicy, profile: bool = False) -> PointResult:
    model.eval()
    try:
        args, kwargs = make_inputs(specs, batch, device, dtype)
    except Exception as error:
        if _is_oom(error):
            return PointResult(status="oom", error=str(error).splitlines()[0][:300])
        raise

    def run() -> Any:
        with torch.inference_mode():
            return model(*args, **kwargs)

    return _point(run, device, policy, profile)


def measure_train(model: torch.nn.Module, specs: Sequence[Any], micro_batch: int, grad_accumulation: int,
                  device: torch.device, dtype: torch.dtype, policy: TimingPolicy,
                  optimizer: torch.optim.Optimizer) -> PointResult:
    """One optimizer step over `grad_accumulation` micro-batches (loss = sum of the float outputs)."""
    model.train()
    try:
        args, kwargs = make_inputs(specs, micro_batch, device, dtype)
    except Exception as error:
        if _is_oom(error):
            return PointResult(status="oom", error=str(error).splitlines()[0][:300])
        raise

    def step() -> None:
        for _ in range(grad_accumulation):
            out = model(*args, **kwargs)
            outputs = out if isinstance(out, (list, tuple)) else [out]
            loss = sum(o.float().sum() for o in outputs if torch.is_tensor(o) and o.is_floating_point())
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return _point(step, device, policy)


def apply_memory_cap(extra_bytes: int) -> None:
    """Cap this process's address space at its current size plus `extra_bytes` (RLIMIT_AS), so that an
    allocation past it fails as an out-of-memory error instead of swapping the machine."""
    import resource

    try:
        with open("/proc/self/statm") as fh:
            current = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        raise MeasureError("--memory-cap needs /proc (Linux)") from None
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = current + extra_bytes
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def profile_by_kind(fn: Callable[[], Any], device: torch.device) -> dict[str, float]:
    """One profiled run of `fn`: self time per sizeup op kind (seconds), from torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    from sizeup.ops.registry import lookup

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        fn()
        synchronize(device)
    out: dict[str, float] = {}
    for event in prof.key_averages():
        name = event.key.replace("::", ".")
        if not name.startswith("aten."):
            continue
        formula = lookup(name)
        kind = formula.kind.value if formula else "other"
        micros = event.self_device_time_total if device.type == "cuda" else event.self_cpu_time_total
        out[kind] = out.get(kind, 0.0) + micros / 1e6
    return out
