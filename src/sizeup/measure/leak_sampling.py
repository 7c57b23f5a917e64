"""Leak watch, sampling: one reading of a process's memory — RSS with psutil, its descendants' RSS, the GPU memory
NVML attributes to it (`pynvml` from `nvidia-ml-py`, imported lazily; absent or unreadable gives None) and, when
the process is this one, the torch CUDA allocator's counters if torch is already imported and CUDA initialized.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, fields

from sizeup.errors import ConfigError, MeasureError

__all__ = ["Sample", "sample_process"]


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
