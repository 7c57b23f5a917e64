"""Host readings for `sizeup watch --util`, with psutil: CPU busy per core and in I/O wait, the watched job's
own CPU (its children too: data-loader workers), disk and network traffic and disk busy time, and the step
times the job reports.

A job reports its steps by appending one line per step to the file `--steps` names (for a command started by
the watch, also in `$SIZEUP_STEP_FILE`): the step's duration in seconds, e.g. `print(dt, file=f, flush=True)`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from sizeup.errors import MeasureError

__all__ = ["HostSample", "HostSampler", "StepReader", "STEP_FILE_ENV"]

STEP_FILE_ENV = "SIZEUP_STEP_FILE"


@dataclass(frozen=True, slots=True, kw_only=True)
class HostSample:
    time_s: float
    """`time.monotonic()` at the end of the interval the rates cover."""
    cpu_pct: tuple[float, ...]
    """Busy percent of each logical core over the interval."""
    iowait_pct: float | None
    """Percent of CPU time idle while I/O was outstanding (Linux); None elsewhere."""
    job_cpu_pct: float | None
    """The watched process (and its descendants) in percent of one core; None without a process."""
    job_threads: int | None
    job_runqueue_pct: float | None = None
    """Time the job's threads were runnable but waiting for a core (Linux /proc/PID/task/*/schedstat), percent
    of one core: CPU demand the machine did not serve."""
    disk_read_bytes_per_s: float
    disk_write_bytes_per_s: float
    disk_busy_pct: float | None
    """Time the busiest disk had I/O in flight (Linux `busy_time`), percent of the interval."""
    net_recv_bytes_per_s: float
    net_sent_bytes_per_s: float

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class HostSampler:
    """Rates over the interval between two calls of `sample()` (the first call only sets the baseline)."""

    def __init__(self, pid: int | None = None, children: bool = True) -> None:
        import psutil

        self._psutil = psutil
        self._pid, self._children = pid, children
        self._procs: dict[int, Any] = {}
        self._sched: dict[int, int] = {}
        self._last: tuple | None = None
        self._reset()

    def _counters(self):
        ps = self._psutil
        disks = ps.disk_io_counters(perdisk=True) or {}
        net = ps.net_io_counters()
        return (time.monotonic(), ps.cpu_times(percpu=True), disks, net)

    def _reset(self) -> None:
        self._last = self._counters()
        self._job_cpu()  # primes psutil's per-process cpu_percent
        self._job_wait_pct(1.0)

    @staticmethod
    def _runqueue_ns(pids) -> dict[int, int]:
        """Run-queue wait in ns per thread of `pids` (field 2 of /proc/PID/task/TID/schedstat); {} off Linux."""
        out = {}
        for pid in pids:
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                try:
                    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                        out[int(tid)] = int(f.read().split()[1])
                except (OSError, ValueError, IndexError):
                    continue
        return out

    def _job_cpu(self) -> tuple[float | None, int | None]:
        if self._pid is None:
            return None, None
        ps = self._psutil
        try:
            root = ps.Process(self._pid)
            procs = [root] + (root.children(recursive=True) if self._children else [])
        except (ps.NoSuchProcess, ps.AccessDenied):
            return None, None
        total, threads = 0.0, 0
        alive = {}
        for p in procs:
            p = self._procs.get(p.pid, p)
            try:
                total += p.cpu_percent(None)
                threads += p.num_threads()
                alive[p.pid] = p
            except (ps.NoSuchProcess, ps.AccessDenied):
                continue
        self._procs = alive
        return total, threads

    def _job_wait_pct(self, dt: float) -> float | None:
        if self._pid is None:
            return None
        now = self._runqueue_ns(self._procs or [self._pid])
        waited = sum(ns - self._sched[tid] for tid, ns in now.items() if tid in self._sched and ns >= self._sched[tid])
        had = bool(self._sched)
        self._sched = now
        return 100.0 * waited / 1e9 / dt if had and now else None

    def sample(self) -> HostSample:
        t1, cpus1, disks1, net1 = self._counters()
        t0, cpus0, disks0, net0 = self._last
        self._last = (t1, cpus1, disks1, net1)
        dt = max(t1 - t0, 1e-6)
        busy, iowait = [], []
        for a, b in zip(cpus0, cpus1):
            total = sum(b) - sum(a)
            idle = (b.idle - a.idle) + (getattr(b, "iowait", 0.0) - getattr(a, "iowait", 0.0))
            busy.append(100.0 * (1 - idle / total) if total > 0 else 0.0)
            if hasattr(b, "iowait") and total > 0:
                iowait.append(100.0 * (b.iowait - a.iowait) / total)
        read = sum(d.read_bytes for d in disks1.values()) - sum(d.read_bytes for d in disks0.values())
        write = sum(d.write_bytes for d in disks1.values()) - sum(d.write_bytes for d in disks0.values())
        busy_disk = None
        shared = [k for k in disks1 if k in disks0 and hasattr(disks1[k], "busy_time")]
        if shared:
            busy_disk = max(100.0 * (disks1[k].busy_time - disks0[k].busy_time) / 1000 / dt for k in shared)
        job, threads = self._job_cpu()
        waiting = self._job_wait_pct(dt)
        return HostSample(time_s=t1, cpu_pct=tuple(max(0.0, min(100.0, b)) for b in busy),
                          iowait_pct=sum(iowait) / len(iowait) if iowait else None, job_cpu_pct=job,
                          job_threads=threads, job_runqueue_pct=waiting, disk_read_bytes_per_s=max(0, read) / dt,
                          disk_write_bytes_per_s=max(0, write) / dt,
                          disk_busy_pct=None if busy_disk is None else min(100.0, busy_disk),
                          net_recv_bytes_per_s=max(0, net1.bytes_recv - net0.bytes_recv) / dt,
                          net_sent_bytes_per_s=max(0, net1.bytes_sent - net0.bytes_sent) / dt)


class StepReader:
    """Reads the step times a job appends to a file, one number of seconds per line; a line that is not a
    positive number is counted and skipped (reported, never guessed)."""

    MAX_LINE = 200

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._offset = 0
        self._partial = b""
        self.steps: list[float] = []
        self.bad_lines = 0

    def read(self) -> list[float]:
        """The steps appended since the last call."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                chunk = f.read(1 << 20)
                self._offset += len(chunk)
        except FileNotFoundError:
            return []
        except OSError as e:
            raise MeasureError(f"--steps {self.path}: {e.strerror or e}") from None
        data = self._partial + chunk
        *lines, self._partial = data.split(b"\n")
        new = []
        for line in lines:
            text = line.strip()
            if not text:
                continue
            try:
                value = float(text[: self.MAX_LINE])
            except ValueError:
                self.bad_lines += 1
                continue
            if value > 0 and value < float("inf"):
                new.append(value)
            else:
                self.bad_lines += 1
        self.steps.extend(new)
        return new
