"""Does the input pipeline keep up with the GPU? The loader's samples per second beside the GPU's.

With the loader prefetching (a DataLoader with workers runs ahead of the training loop), a step takes the longer
of the GPU's work and the loader's delivery of one batch, so the throughput is min(GPU rate, loader rate) and
the GPU waits 1 − loader rate / GPU rate of the time when the loader is the slower.

The loader's rate at N workers: each worker loads its own batches (PyTorch's data-loading docs: "Setting the
argument num_workers as a positive integer will turn on multi-process data loading with the specified number of
loader worker processes", pytorch.org/docs/stable/data.html, read 2026-12-04), so N workers deliver N times one
worker's rate — until the CPU runs out: a sample costs c CPU-seconds (measured), the workers have the cores but
one (the training process keeps one), so no count exceeds (cores − 1) / c:

    rate(N) = min(N × r1, (cores − 1) / c)

A loader that waits (reads from disk or network) scales past the core count; one that computes stops at it.
Measured points win over the formula where both exist on the measuring machine. When the CPU per sample is not
known (a per-worker rate given by hand), each worker is taken to keep one core busy: at most cores − 1 workers
count.

Another CPU: the per-worker rate is scaled by the ratio of single-core boost clocks (assumed: the same work per
cycle — a different microarchitecture or SIMD width is not modelled, and the estimate says so).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sizeup.errors import ConfigError

__all__ = ["LoaderRates", "PipelineVerdict", "compare_pipeline", "loader_rate_at", "per_worker_rate"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LoaderRates:
    """Measured loader rates: {workers: samples/s}; 0 workers is the training process loading by itself."""

    by_workers: dict[int, float]
    cores: int
    """Cores of the measuring machine."""
    cpu_s_per_sample: float | None = None
    """CPU time one sample costs (None: not measured; the rate is then not capped by the cores)."""

    def __post_init__(self) -> None:
        if not self.by_workers:
            raise ConfigError("no loader rate measured")
        if any(w < 0 or not (r > 0 and math.isfinite(r)) for w, r in self.by_workers.items()):
            raise ConfigError("loader rates: expected worker counts >= 0 and positive finite rates")


def per_worker_rate(rates: LoaderRates) -> float:
    """Samples/s one worker delivers: the one-worker point, else the best rate per worker measured, else the
    in-process (0 workers) rate."""
    by = rates.by_workers
    if 1 in by:
        return by[1]
    multi = [r / w for w, r in by.items() if w >= 1]
    return max(multi) if multi else by[0]


def loader_rate_at(rates: LoaderRates, workers: int, cores: int, scale: float = 1.0) -> tuple[float, str]:
    """Samples/s at `workers` on a machine of `cores` cores whose cores are `scale` times as fast; (rate, how).

    On the measuring machine (same cores, scale 1) the measured points decide: a measured count as measured,
    one between two measured counts interpolated, one beyond them at the per-worker rate of the nearest measured
    count (the scaling efficiency seen there kept). Elsewhere, N times one worker's rate. Both capped by the CPU
    the workers can have."""
    by = rates.by_workers
    if workers == 0:
        if 0 in by:
            return by[0] * scale, "measured in-process (0 workers)"
        return per_worker_rate(rates) * scale, "in-process, taken as one worker's rate"
    measured = sorted((w, r) for w, r in by.items() if w >= 1)
    if scale == 1.0 and cores == rates.cores and measured:
        if workers in by:
            return by[workers], f"measured at {workers} workers"
        lower = [(w, r) for w, r in measured if w < workers]
        upper = [(w, r) for w, r in measured if w > workers]
        if lower and upper:
            (w0, r0), (w1, r1) = lower[-1], upper[0]
            rate, how = r0 + (r1 - r0) * (workers - w0) / (w1 - w0), f"between the measured {w0} and {w1} workers"
        else:
            w, r = lower[-1] if lower else upper[0]
            rate, how = r * workers / w, f"{workers} x the per-worker rate measured at {w} workers"
    else:
        rate, how = per_worker_rate(rates) * scale * workers, f"{workers} x one worker's rate"
    if not rates.cpu_s_per_sample:  # CPU per sample unknown: take each worker as keeping one core busy
        usable = max(1, cores - 1)
        if workers > usable:
            return rate * usable / workers, (f"{usable} workers' rate: the CPU per sample is not known, so each worker "
                                             f"is taken to keep one of the {usable} cores left busy")
        return rate, how
    if rates.cpu_s_per_sample:
        usable = max(1, cores - 1)
        cap = usable * scale / rates.cpu_s_per_sample
        if cap < rate:
            return cap, (f"{usable} cores / {rates.cpu_s_per_sample / scale * 1e3:,.2f} ms of CPU per sample (the "
                         f"cores run out before {workers} workers)")
    return rate, how


def _best(rates: LoaderRates, cores: int, scale: float, limit: int = 1024) -> tuple[int, float]:
    """(workers, rate) of the fastest count up to `limit`."""
    return max(((n, loader_rate_at(rates, n, cores, scale)[0]) for n in range(0, limit + 1)), key=lambda t: t[1])


@dataclass(frozen=True, slots=True, kw_only=True)
class PipelineVerdict:
    gpu_samples_per_s: float
    loader_samples_per_s: float
    workers: int
    input_bound: bool
    gpu_wait: float
    """Share of the time the GPU waits for data (0 when the loader keeps up)."""
    workers_needed: int | None
    """Fewest workers whose rate reaches the GPU's; None: not reachable on the cores there are."""
    cores: int
    summary: str
    assumptions: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"gpu_samples_per_s": self.gpu_samples_per_s, "loader_samples_per_s": self.loader_samples_per_s,
                "workers": self.workers, "input_bound": self.input_bound, "gpu_wait": self.gpu_wait,
                "workers_needed": self.workers_needed, "cores": self.cores, "summary": self.summary,
                "assumptions": list(self.assumptions)}


def compare_pipeline(rates: LoaderRates, gpu_samples_per_s: float, workers: int, *, cores: int | None = None,
                     scale: float = 1.0, measured_on: str = "this machine") -> PipelineVerdict:
    """The loader at `workers` beside the GPU's rate, and the fewest workers that keep up (on `cores` cores,
    default the measuring machine's, with the per-worker rate × `scale`)."""
    if not (gpu_samples_per_s > 0 and math.isfinite(gpu_samples_per_s)):
        raise ConfigError(f"GPU rate {gpu_samples_per_s!r}: expected positive samples per second")
    if workers < 0:
        raise ConfigError(f"--workers {workers}: expected 0 or more")
    cores = cores or rates.cores
    rate, how = loader_rate_at(rates, workers, cores, scale)
    needed = next((n for n in range(0, 1025) if loader_rate_at(rates, n, cores, scale)[0] >= gpu_samples_per_s),
                  None)
    wait = max(0.0, 1 - rate / gpu_samples_per_s)
    bound = rate < gpu_samples_per_s
    one = per_worker_rate(rates) * scale
    if bound:
        best = _best(rates, cores, scale)[1]
        fix = (f"{needed} workers keep up" if needed is not None else
               f"no worker count on {cores} cores keeps up: at most {best:,.0f} samples/s "
               f"({one:,.0f} per worker; the GPU would wait {1 - best / gpu_samples_per_s:.0%} at best) — a faster "
               "CPU, more cores, lighter preprocessing or decoding on the GPU")
        summary = (f"input-bound: the GPU waits {wait:.0%} of the time — the loader gives {rate:,.0f} samples/s at "
                   f"{workers} workers against the GPU's {gpu_samples_per_s:,.0f}; {fix}")
    else:
        summary = (f"the loader keeps up: {rate:,.0f} samples/s at {workers} workers against the GPU's "
                   f"{gpu_samples_per_s:,.0f}" + (f" ({needed} workers would do)" if needed is not None and
                                                  needed < workers else ""))
    assumptions = [f"loader rate at {workers} workers: {how}",
                   "with prefetching a step takes the longer of the GPU's work and one batch's loading: the GPU "
                   "waits 1 - loader rate / GPU rate of the time",
                   f"per-worker rate {one:,.1f} samples/s, measured on {measured_on}"
                   + (f", scaled x{scale:.2f} for the other CPU (single-core boost clock ratio; the same work per "
                      "cycle assumed)" if scale != 1.0 else "")]
    if rates.cpu_s_per_sample:
        assumptions.append(f"CPU per sample {rates.cpu_s_per_sample * 1e3:,.2f} ms (measured): {max(1, cores - 1)} of "
                           f"{cores} cores for workers cap the loader at "
                           f"{max(1, cores - 1) * scale / rates.cpu_s_per_sample:,.0f} samples/s")
    return PipelineVerdict(gpu_samples_per_s=gpu_samples_per_s, loader_samples_per_s=rate, workers=workers,
                           input_bound=bound, gpu_wait=wait, workers_needed=needed, cores=cores, summary=summary,
                           assumptions=tuple(assumptions))


def clock_scale(measured_cpu, target_cpu) -> tuple[float, str | None]:
    """Per-worker rate scale from the measuring CPU to the target CPU (catalog DeviceSpecs or None): the ratio of
    their boost clocks; (1.0, why not) when either is unknown."""
    if target_cpu is None:
        return 1.0, None
    if measured_cpu is None:
        return 1.0, "the measuring CPU is not in the catalog: the per-worker rate is used unscaled"
    a, b = measured_cpu.boost_clock_hz, target_cpu.boost_clock_hz
    if not a or not b:
        return 1.0, f"no boost clock for {measured_cpu.name if not a else target_cpu.name}: per-worker rate unscaled"
    return b / a, None


def rates_from_points(points: Sequence[dict], cores: int) -> LoaderRates:
    """LoaderRates from loader points ({"workers", "samples_per_s", "cpu_s_per_sample"}): the CPU per sample of
    the in-process point when there is one (exact), else the smallest a worker point gave."""
    by = {int(p["workers"]): float(p["samples_per_s"]) for p in points if p.get("workers") is not None}
    if not by:
        by = {1: float(points[0]["samples_per_s"])}
    cpu = [p.get("cpu_s_per_sample") for p in points if p.get("workers") == 0 and p.get("cpu_s_per_sample")] or \
        sorted(p["cpu_s_per_sample"] for p in points if p.get("cpu_s_per_sample"))
    return LoaderRates(by_workers=by, cores=cores, cpu_s_per_sample=cpu[0] if cpu else None)


def gpu_samples_per_s(target: str, inputs, device, *, train: bool, dtype: str = "fp32",
                      optimizer: str = "adamw") -> tuple[float, str]:
    """The model's predicted samples per second on `device` at the batch of `inputs` (a traced forward, or a
    traced training step: forward, backward, optimizer), priced on the PyTorch eager runtime; (rate, what)."""
    from sizeup.ingest.trace_cache import traced_ledger
    from sizeup.ingest.trace_inputs import TraceMode
    from sizeup.engines.runtimes import get_runtime
    from sizeup.price.roofline import price

    mode = TraceMode.TRAIN if train else TraceMode.INFERENCE
    ledger = traced_ledger(target, inputs, dtype=dtype, mode=mode, optimizer=optimizer,
                           name=target.rpartition(":")[2])
    batch = inputs[0].shape[0]
    seconds = price(ledger, device, runtime=get_runtime("pytorch-eager")).total_s.typical
    what = "training step (forward, backward, optimizer)" if train else "forward"
    return batch / seconds, f"{ledger.name}: one {what} of batch {batch} in {seconds * 1e3:,.2f} ms on {device.name}"
