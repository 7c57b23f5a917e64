"""The verdict of `sizeup watch --util`: why a job is as fast as it is, from what was sampled, with the evidence.

Verdicts (the first that holds, in this order):
- throttled (thermal / power): in at least `THROTTLE_SHARE` of the busy samples NVML reported a thermal or power
  clocks-event reason, or (Jetson, no reasons) the GPU clock sat below `CLOCK_LOW` of the power mode's maximum
  while busy and the hottest sensor was within `NEAR_TRIP_C` of the trip point given; the clock lost is
  1 − median(clock / max clock) over those samples;
- memory-bound: the GPU was busy and its memory controller too (both at least `BUSY_PCT`);
- GPU-bound: the GPU was busy at least `BUSY_PCT` of the time;
- idle gaps: busy and idle samples alternate (each at least `GAP_SHARE` of the samples): the job stops and
  starts (synchronisation, evaluation, checkpoints, a loader that refills in bursts);
- input-bound (CPU): the GPU under-used while the job's cores were saturated (all cores above `CORE_BUSY_PCT`, or
  the job pinned at one core: the main process or a single loader);
- input-bound (I/O): the GPU under-used while the CPU waited on I/O (`IOWAIT_PCT`) or a disk was busy
  (`DISK_BUSY_PCT`);
- under-used: the GPU under-used with neither saturated: a small batch, host-side work, or waiting elsewhere.
Without a GPU (this machine, a CPU job) the same CPU and I/O rules say whether the job is CPU-bound on all
cores, on one core, I/O-bound, or mostly waiting.

`BUSY_PCT` is the rule of thumb the seeds quote for nvidia-smi's GPU-Util ("under 70% means a CPU, I/O or
batch-size bottleneck"); the other thresholds are ours, stated here and in every verdict's evidence.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sizeup.measure.util_gpu import POWER_BITS, THERMAL_BITS, GpuSample
from sizeup.measure.util_host import HostSample

__all__ = ["Diagnosis", "diagnose", "BUSY_PCT"]

BUSY_PCT = 70.0
IDLE_PCT = 10.0
CORE_BUSY_PCT = 90.0
IOWAIT_PCT = 10.0
DISK_BUSY_PCT = 80.0
THROTTLE_SHARE = 0.25
GAP_SHARE = 0.2
CLOCK_LOW = 0.9
NEAR_TRIP_C = 5.0
MEMORY_FULL = 0.95
STEP_SPIKE = 3.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnosis:
    verdict: str
    """throttled-thermal | throttled-power | memory-bound | gpu-bound | idle-gaps | input-bound-cpu |
    input-bound-io | under-used | cpu-bound | cpu-bound-one-core | io-bound | waiting | no-samples"""
    summary: str
    evidence: tuple[str, ...] = ()
    findings: tuple[str, ...] = ()
    """Other things seen that do not decide the verdict (memory near full, step-time spikes)."""
    numbers: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "summary": self.summary, "evidence": list(self.evidence),
                "findings": list(self.findings), "numbers": self.numbers}


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _cpu_picture(host: Sequence[HostSample]) -> dict[str, Any]:
    cores = len(host[0].cpu_pct)
    per_core = [statistics.fmean(s.cpu_pct[i] for s in host) for i in range(cores)]
    busiest = max(range(cores), key=per_core.__getitem__)
    job = [s.job_cpu_pct for s in host if s.job_cpu_pct is not None]
    queued = [s.job_runqueue_pct for s in host if s.job_runqueue_pct is not None]
    iowait = [s.iowait_pct for s in host if s.iowait_pct is not None]
    disk = [s.disk_busy_pct for s in host if s.disk_busy_pct is not None]
    return {"cores": cores, "per_core_pct": per_core, "busiest_core": busiest, "busiest_pct": per_core[busiest],
            "all_cores_pct": statistics.fmean(per_core), "job_cpu_pct": _mean(job),
            "job_runqueue_pct": _mean(queued), "iowait_pct": _mean(iowait),
            "disk_busy_pct": _mean(disk),
            "disk_read_bytes_per_s": statistics.fmean(s.disk_read_bytes_per_s for s in host),
            "disk_write_bytes_per_s": statistics.fmean(s.disk_write_bytes_per_s for s in host),
            "net_recv_bytes_per_s": statistics.fmean(s.net_recv_bytes_per_s for s in host)}


def _cpu_evidence(c: dict[str, Any]) -> list[str]:
    out = [f"CPU: all {c['cores']} cores {c['all_cores_pct']:.0f}% busy on average, the busiest (core "
           f"{c['busiest_core']}) {c['busiest_pct']:.0f}%"]
    if c["job_cpu_pct"] is not None:
        out.append(f"the job and its children used {c['job_cpu_pct']:.0f}% of one core "
                   f"({c['job_cpu_pct'] / 100:.2f} cores)"
                   + (f" and waited for a core {c['job_runqueue_pct']:.0f}% more (runnable, not running)"
                      if c["job_runqueue_pct"] else ""))
    if c["iowait_pct"] is not None:
        out.append(f"I/O wait {c['iowait_pct']:.1f}% of CPU time"
                   + (f"; busiest disk busy {c['disk_busy_pct']:.0f}%" if c["disk_busy_pct"] is not None else "")
                   + f"; disk read {c['disk_read_bytes_per_s'] / 1e6:.1f} MB/s, write "
                   f"{c['disk_write_bytes_per_s'] / 1e6:.1f} MB/s")
    return out


def _cpu_saturated(c: dict[str, Any]) -> str | None:
    """'all' (the job keeps every core busy), 'one' (the job holds about one core: the main process or a single
    loader), or None. The job's own demand decides when it was sampled — the CPU it got plus the time its threads
    waited in the run queue for a core (on a shared machine, CPU it wanted and did not get); other processes'
    load is not the job's."""
    job, cores = c["job_cpu_pct"], c["cores"]
    if job is None:
        return "all" if c["all_cores_pct"] >= CORE_BUSY_PCT else "one" if c["busiest_pct"] >= CORE_BUSY_PCT else None
    demand = job + (c["job_runqueue_pct"] or 0.0)
    if demand >= CORE_BUSY_PCT * cores:
        return "all"
    if demand >= CORE_BUSY_PCT:
        return "one"
    return None


def _io_bound(c: dict[str, Any]) -> bool:
    return (c["iowait_pct"] or 0) >= IOWAIT_PCT or (c["disk_busy_pct"] or 0) >= DISK_BUSY_PCT


def _step_findings(steps: Sequence[float]) -> tuple[list[str], dict[str, Any]]:
    if len(steps) < 3:
        return [], {}
    median = statistics.median(steps)
    ordered = sorted(steps)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    spikes = [i for i, s in enumerate(steps) if s > STEP_SPIKE * median]
    numbers = {"steps": len(steps), "step_median_s": median, "step_p95_s": p95, "step_max_s": max(steps),
               "step_spikes": len(spikes)}
    out = [f"steps: {len(steps)} reported, median {median * 1e3:.1f} ms, P95 {p95 * 1e3:.1f} ms, "
           f"max {max(steps) * 1e3:.1f} ms"]
    if spikes:
        gaps = [b - a for a, b in zip(spikes, spikes[1:])]
        every = f", every {statistics.median(gaps):.0f} steps" if len(gaps) >= 2 and \
            max(gaps) - min(gaps) <= 1 else ""
        out.append(f"{len(spikes)} steps took over {STEP_SPIKE:g}x the median{every} (evaluation, checkpoints, a "
                   "loader refilling, or garbage collection)")
    return out, numbers


def diagnose(gpu: Sequence[GpuSample], host: Sequence[HostSample], steps: Sequence[float] = (), *,
             trip_c: float | None = None) -> Diagnosis:
    """The verdict over the whole watch. `gpu`: every device's samples (one device's or all of them);
    `trip_c`: the temperature at which the device throttles (Jetson), when known."""
    findings, numbers = _step_findings(steps)
    if not host and not gpu:
        return Diagnosis(verdict="no-samples", summary="nothing was sampled (the job ended at once?)")
    cpu = _cpu_picture(host) if host else None
    numbers |= {} if cpu is None else {k: v for k, v in cpu.items() if k != "per_core_pct"}
    cpu_lines = _cpu_evidence(cpu) if cpu else []
    if cpu is not None and cpu["job_cpu_pct"] is not None and (cpu["job_runqueue_pct"] or 0) >= 0.25 * max(
            cpu["job_cpu_pct"], 1.0):
        findings.append(f"the job waited for a core {cpu['job_runqueue_pct']:.0f}% of the time besides running "
                        f"{cpu['job_cpu_pct']:.0f}%: other processes compete for the CPU (timings here are slowed)")
    readings = [g for g in gpu if g.util_pct is not None]
    if not readings:
        return _cpu_only(cpu, cpu_lines, findings, numbers)
    util = [g.util_pct for g in readings]
    mean_util = statistics.fmean(util)
    busy = [g for g in readings if g.util_pct >= 50]
    memory = [g.memory_util_pct for g in readings if g.memory_util_pct is not None]
    numbers |= {"gpu_samples": len(readings), "gpu_util_pct": mean_util,
                "gpu_memory_util_pct": _mean(memory), "gpu_busy_share": len(busy) / len(readings)}
    gpu_lines = [f"GPU: busy {mean_util:.0f}% of the time on average over {len(readings)} samples"
                 + (f", memory controller {numbers['gpu_memory_util_pct']:.0f}%" if memory else "")]
    temps = [g.temperature_c for g in readings if g.temperature_c is not None]
    power = [g.power_w for g in readings if g.power_w is not None]
    if temps or power:
        gpu_lines.append(", ".join(([f"temperature up to {max(temps):.0f} °C"] if temps else []) +
                                   ([f"power {statistics.fmean(power):.0f} W average"] if power else [])))
    full = [g for g in readings if g.memory_used_bytes and g.memory_total_bytes and
            g.memory_used_bytes >= MEMORY_FULL * g.memory_total_bytes]
    if full:
        findings.append(f"device memory at least {MEMORY_FULL:.0%} full in {len(full)} of {len(readings)} samples: "
                        "the batch is as large as memory allows")
    throttled = _throttle(busy, trip_c)
    if throttled is not None:
        kind, share, lost, why = throttled
        numbers |= {"throttle_share": share, "clock_lost": lost}
        return Diagnosis(verdict=f"throttled-{kind}",
                         summary=f"throttled ({kind}): {share:.0%} of the busy time, clock {lost:.0%} below its "
                                 "maximum", evidence=(why, *gpu_lines, *cpu_lines), findings=tuple(findings),
                         numbers=numbers)
    if mean_util >= BUSY_PCT:
        if memory and numbers["gpu_memory_util_pct"] >= BUSY_PCT:
            return Diagnosis(verdict="memory-bound", summary="memory-bound: the GPU is busy and its memory is read "
                             f"or written {numbers['gpu_memory_util_pct']:.0f}% of the time",
                             evidence=(*gpu_lines, *cpu_lines), findings=tuple(findings), numbers=numbers)
        return Diagnosis(verdict="gpu-bound", summary=f"GPU-bound: kernels run {mean_util:.0f}% of the time; a faster "
                         "GPU (or fewer FLOPs) is what would help", evidence=(*gpu_lines, *cpu_lines),
                         findings=tuple(findings), numbers=numbers)
    idle = [u for u in util if u < IDLE_PCT]
    if len(idle) >= GAP_SHARE * len(util) and len(busy) >= GAP_SHARE * len(util):
        return Diagnosis(verdict="idle-gaps", summary=f"idle gaps: the GPU idles in {len(idle) / len(util):.0%} of "
                         f"the samples between busy spells ({len(busy) / len(util):.0%} of them)",
                         evidence=(*gpu_lines, *cpu_lines), findings=tuple(findings), numbers=numbers)
    wait = 1 - mean_util / 100
    if cpu is not None and _cpu_saturated(cpu):
        where = "every core" if _cpu_saturated(cpu) == "all" else f"one core (core {cpu['busiest_core']})"
        return Diagnosis(verdict="input-bound-cpu", summary=f"input-bound (CPU): the GPU waits {wait:.0%} of the "
                         f"time while {where} is saturated: more loader workers, or lighter preprocessing",
                         evidence=(*gpu_lines, *cpu_lines), findings=tuple(findings), numbers=numbers)
    if cpu is not None and _io_bound(cpu):
        return Diagnosis(verdict="input-bound-io", summary=f"input-bound (I/O): the GPU waits {wait:.0%} of the time "
                         "while the CPU waits on the disk: faster storage, caching, or more workers reading ahead",
                         evidence=(*gpu_lines, *cpu_lines), findings=tuple(findings), numbers=numbers)
    return Diagnosis(verdict="under-used", summary=f"under-used: the GPU waits {wait:.0%} of the time with neither CPU "
                     "nor I/O saturated: a small batch, host-side work between kernels, or waiting on the network",
                     evidence=(*gpu_lines, *cpu_lines), findings=tuple(findings), numbers=numbers)


def _throttle(busy: Sequence[GpuSample], trip_c: float | None):
    """(kind, share of busy samples, clock lost, evidence line) or None."""
    if not busy:
        return None
    for kind, bits in (("thermal", THERMAL_BITS), ("power", POWER_BITS)):
        hit = [g for g in busy if g.throttle_mask is not None and g.throttle_mask & bits]
        if len(hit) >= THROTTLE_SHARE * len(busy):
            ratios = [g.clock_ratio for g in hit if g.clock_ratio is not None]
            lost = 1 - statistics.median(ratios) if ratios else 0.0
            names = "SW/HW thermal slowdown" if kind == "thermal" else "SW power cap / HW power brake"
            return kind, len(hit) / len(busy), lost, (f"NVML reported {names} in {len(hit)} of {len(busy)} busy samples;"
                                                      f" SM clock at {1 - lost:.0%} of its maximum")
    if trip_c is not None and all(g.throttle_mask is None for g in busy):  # a Jetson: clock and temperature
        slow = [g for g in busy if g.clock_ratio is not None and g.clock_ratio < CLOCK_LOW and
                g.temperature_c is not None and g.temperature_c >= trip_c - NEAR_TRIP_C]
        if len(slow) >= THROTTLE_SHARE * len(busy):
            lost = 1 - statistics.median(g.clock_ratio for g in slow)
            hottest = max(g.temperature_c for g in slow)
            return "thermal", len(slow) / len(busy), lost, (
                f"GPU clock below {CLOCK_LOW:.0%} of the power mode's maximum in {len(slow)} of {len(busy)} busy "
                f"samples at up to {hottest:.1f} °C (throttling from {trip_c:g} °C)")
    return None


def _cpu_only(cpu, cpu_lines, findings, numbers) -> Diagnosis:
    evidence = ("no GPU readings (no NVML device, no tegrastats): the verdict is the CPU's", *cpu_lines)
    if cpu is None:
        return Diagnosis(verdict="no-samples", summary="no CPU or GPU readings", findings=tuple(findings),
                         numbers=numbers)
    saturated = _cpu_saturated(cpu)
    if saturated == "all":
        return Diagnosis(verdict="cpu-bound", summary=f"CPU-bound on all {cpu['cores']} cores",
                         evidence=evidence, findings=tuple(findings), numbers=numbers)
    if saturated == "one":
        return Diagnosis(verdict="cpu-bound-one-core", summary=f"CPU-bound on one core while {cpu['cores'] - 1} of "
                         f"{cpu['cores']} are left: a single-threaded step (the Python loop, one loader worker); "
                         "more workers or threads would use the rest", evidence=evidence, findings=tuple(findings),
                         numbers=numbers)
    if _io_bound(cpu):
        return Diagnosis(verdict="io-bound", summary="I/O-bound: the CPU waits on the disk", evidence=evidence,
                         findings=tuple(findings), numbers=numbers)
    return Diagnosis(verdict="waiting", summary="waiting: neither the CPU nor the disk is saturated (sleeping, "
                     "network, or another process)", evidence=evidence, findings=tuple(findings), numbers=numbers)
