"""`sizeup watch --util`: sample a job's GPU (NVML, nvidia-smi or tegrastats), the host's CPU per core, disk and
network, and the job's reported step times, every `interval_s`, until the job ends or `duration_s` passes;
then say why the job runs as fast as it does (measure/util_verdict.py).

Readings come from, in order of preference with `gpu="auto"`: NVML through pynvml (nvidia-ml-py), else
`nvidia-smi --query-gpu` once per tick, else `tegrastats` on a Jetson, else none (the verdict is then the CPU's).
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sizeup.errors import ConfigError, MeasureError
from sizeup.measure.util_gpu import (NVIDIA_SMI_QUERY, GpuSample, parse_nvidia_smi_csv, parse_tegrastats,
                                     read_nvml)
from sizeup.measure.util_host import STEP_FILE_ENV, HostSample, HostSampler, StepReader
from sizeup.measure.util_verdict import Diagnosis, diagnose

__all__ = ["GPU_SOURCES", "UtilConfig", "UtilResult", "watch_util", "GpuReader", "replay"]

GPU_SOURCES = ("auto", "nvml", "nvidia-smi", "tegrastats", "none")


@dataclass(frozen=True, slots=True, kw_only=True)
class UtilConfig:
    pid: int | None = None
    command: tuple[str, ...] = ()
    interval_s: float = 1.0
    duration_s: float = 3600.0
    gpu: str = "auto"
    steps_path: str | None = None
    max_gpu_clock_mhz: float | None = None
    """Jetson: the power mode's GPU maximum (tegrastats does not print it)."""
    trip_c: float | None = None
    """Jetson: the temperature at which the GPU is throttled."""
    children: bool = True

    def __post_init__(self) -> None:
        if (self.pid is None) == (not self.command):
            raise ConfigError("give --pid PID or -- COMMAND ..., not both and not neither")
        for name in ("interval_s", "duration_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value <= 0:
                raise ConfigError(f"--{name[:-2]} {value!r}: expected a positive time")
        if self.gpu not in GPU_SOURCES:
            raise ConfigError(f"--gpu-source {self.gpu!r}: expected one of {', '.join(GPU_SOURCES)}")


class GpuReader:
    """One GPU reading per call of `read()` from the chosen source; `source` names it ('none' when nothing)."""

    def __init__(self, source: str, interval_s: float, max_clock_mhz: float | None = None) -> None:
        self.source, self._max = "none", max_clock_mhz
        self._nvml = None
        self._tegra: subprocess.Popen | None = None
        self._line: str | None = None
        if source in ("auto", "nvml"):
            self._nvml = self._init_nvml(required=source == "nvml")
            if self._nvml is not None:
                self.source = "nvml"
                return
        if source == "nvidia-smi" or (source == "auto" and shutil.which("nvidia-smi")):
            if shutil.which("nvidia-smi") is None:
                raise MeasureError("--gpu-source nvidia-smi: nvidia-smi is not on the PATH")
            self.source = "nvidia-smi"
            return
        if source in ("auto", "tegrastats") and shutil.which("tegrastats"):
            self._start_tegrastats(interval_s)
            self.source = "tegrastats"
            return
        if source == "tegrastats":
            raise MeasureError("--gpu-source tegrastats: tegrastats is not on the PATH (a Jetson has it in /usr/bin)")

    @staticmethod
    def _init_nvml(required: bool):
        try:
            import pynvml

            pynvml.nvmlInit()
            return pynvml
        except ImportError:
            if required:
                raise MeasureError("--gpu-source nvml needs nvidia-ml-py: pip install nvidia-ml-py") from None
        except Exception as e:  # no driver, no device
            if required:
                raise MeasureError(f"NVML did not start: {e}") from None
        return None

    def _start_tegrastats(self, interval_s: float) -> None:
        ms = max(100, int(interval_s * 1000))
        self._tegra = subprocess.Popen(["tegrastats", "--interval", str(ms)], stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, text=True)

        def pump() -> None:
            for line in self._tegra.stdout:  # type: ignore[union-attr]
                self._line = line.strip()

        threading.Thread(target=pump, daemon=True).start()

    def read(self) -> list[GpuSample]:
        if self.source == "nvml":
            return read_nvml(self._nvml)
        if self.source == "nvidia-smi":
            done = subprocess.run(["nvidia-smi", f"--query-gpu={NVIDIA_SMI_QUERY}", "--format=csv"],
                                  capture_output=True, text=True, timeout=10)
            if done.returncode != 0:
                return []
            ticks = parse_nvidia_smi_csv(done.stdout)
            return ticks[-1] if ticks else []
        if self.source == "tegrastats" and self._line:
            return [parse_tegrastats(self._line, self._max).gpu]
        return []

    def close(self) -> None:
        if self._tegra is not None:
            self._tegra.terminate()
            try:
                self._tegra.wait(5)
            except subprocess.TimeoutExpired:
                self._tegra.kill()
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:  # shutting down a library that is going away: nothing to report
                pass


@dataclass(frozen=True, slots=True, kw_only=True)
class UtilResult:
    target: str
    interval_s: float
    gpu_source: str
    host: tuple[HostSample, ...]
    gpu: tuple[tuple[GpuSample, ...], ...]
    """Per tick, every device."""
    steps: tuple[float, ...]
    bad_step_lines: int
    ended: str
    diagnosis: Diagnosis
    per_device: dict[int, Diagnosis] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "interval_s": self.interval_s, "gpu_source": self.gpu_source,
                "ended": self.ended, "samples": len(self.host), "steps": len(self.steps),
                "bad_step_lines": self.bad_step_lines, "diagnosis": self.diagnosis.to_dict(),
                "per_device": {str(k): v.to_dict() for k, v in self.per_device.items()},
                "host": [s.to_dict() for s in self.host],
                "gpu": [[g.to_dict() for g in tick] for tick in self.gpu], "step_times_s": list(self.steps)}


def _terminate(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def watch_util(cfg: UtilConfig, on_tick: Callable[[HostSample, list[GpuSample]], None] | None = None,
               stdout: int | None = None) -> UtilResult:
    """Watch `cfg.pid` or start `cfg.command` (terminated at the end) and sample every `cfg.interval_s`."""
    import psutil

    if cfg.pid is not None:
        try:
            target = f"pid {cfg.pid} ({psutil.Process(cfg.pid).name()})"
        except psutil.NoSuchProcess:
            raise MeasureError(f"no process with pid {cfg.pid}") from None
        except psutil.AccessDenied:
            raise MeasureError(f"no permission to read process {cfg.pid}") from None
    else:
        target = " ".join(cfg.command)
    reader = GpuReader(cfg.gpu, cfg.interval_s, cfg.max_gpu_clock_mhz)  # a missing tool is named before the job starts
    steps_path = cfg.steps_path
    tmp_dir = None
    proc = None
    pid = cfg.pid
    if cfg.command:
        if steps_path is None:
            tmp_dir = tempfile.mkdtemp(prefix="sizeup-steps-")
            steps_path = os.path.join(tmp_dir, "steps.txt")
        env = os.environ | {STEP_FILE_ENV: str(steps_path)}
        try:
            proc = subprocess.Popen(list(cfg.command), stdout=stdout, env=env)
        except OSError as e:
            reader.close()
            shutil.rmtree(tmp_dir, ignore_errors=True)
            raise MeasureError(f"cannot start {cfg.command[0]!r}: {e.strerror or e}") from None
        pid = proc.pid
    host: list[HostSample] = []
    gpu: list[tuple[GpuSample, ...]] = []
    steps = StepReader(steps_path) if steps_path else None
    ended = "duration"
    try:
        sampler = HostSampler(pid, children=cfg.children)
        start = time.monotonic()
        k = 0
        while True:
            k += 1
            wake = start + k * cfg.interval_s
            while time.monotonic() < wake:
                if proc is not None and proc.poll() is not None:
                    break
                time.sleep(min(0.05, max(0.0, wake - time.monotonic())))
            exited = (proc.poll() is not None) if proc is not None else not psutil.pid_exists(pid)
            h = sampler.sample()
            g = reader.read()
            host.append(h)
            gpu.append(tuple(g))
            if steps is not None:
                steps.read()
            if on_tick is not None:
                on_tick(h, g)
            if exited:
                ended = "exited"
                break
            if time.monotonic() - start >= cfg.duration_s:
                break
    finally:
        reader.close()
        if proc is not None:
            _terminate(proc)
        if steps is not None:
            steps.read()
        if tmp_dir is not None:
            shutil.rmtree(tmp_dir, ignore_errors=True)
    flat = [s for tick in gpu for s in tick]
    devices = sorted({s.index for s in flat})
    step_times = tuple(steps.steps) if steps is not None else ()
    diagnosis = diagnose(flat, host, step_times, trip_c=cfg.trip_c)
    per_device = {d: diagnose([s for s in flat if s.index == d], host, (), trip_c=cfg.trip_c)
                  for d in devices} if len(devices) > 1 else {}
    return UtilResult(target=target, interval_s=cfg.interval_s, gpu_source=reader.source,
                      host=tuple(host), gpu=tuple(gpu), steps=step_times,
                      bad_step_lines=steps.bad_lines if steps is not None else 0, ended=ended, diagnosis=diagnosis,
                      per_device=per_device)


def replay(text: str, *, max_gpu_clock_mhz: float | None = None, trip_c: float | None = None,
           interval_s: float = 1.0, name: str = "recording") -> UtilResult:
    """The verdict over a recorded log: `nvidia-smi --query-gpu=… --format=csv -l 1` output, or tegrastats lines
    (`tegrastats --logfile`), whose per-core CPU is read too. No job CPU, disk or step times are in either."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise MeasureError(f"{name}: empty")
    host: list[HostSample] = []
    if lines[0].lstrip().lower().startswith(("index", "timestamp")):
        gpu = [tuple(tick) for tick in parse_nvidia_smi_csv(text)]
        source = "nvidia-smi"
    else:
        tegra = [parse_tegrastats(line, max_gpu_clock_mhz) for line in lines]
        gpu = [(t.gpu,) for t in tegra]
        source = "tegrastats"
        for k, t in enumerate(tegra):
            cores = tuple(c for c in t.cpu_pct if c is not None)
            if cores:
                host.append(HostSample(time_s=k * interval_s, cpu_pct=cores, iowait_pct=None, job_cpu_pct=None,
                                       job_threads=None, disk_read_bytes_per_s=0.0, disk_write_bytes_per_s=0.0,
                                       disk_busy_pct=None, net_recv_bytes_per_s=0.0, net_sent_bytes_per_s=0.0))
    flat = [s for tick in gpu for s in tick]
    return UtilResult(target=name, interval_s=interval_s, gpu_source=source, host=tuple(host), gpu=tuple(gpu),
                      steps=(), bad_step_lines=0, ended="recording",
                      diagnosis=diagnose(flat, host, (), trip_c=trip_c))
