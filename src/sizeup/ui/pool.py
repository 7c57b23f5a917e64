"""The bounded worker pool every computing request of the UI runs in.

Workers are separate processes (`python -m sizeup.ui.worker`), started on demand and kept warm, so a
slow request never holds the event loop (static files and pages keep answering), never holds the GIL
of another request, and can be stopped: a job past the time limit has its process killed and the
request answers 504 in one line. Two lanes keep long plans from starving quick answers: `quick`
(estimate, compare, train, runs) and `long` (plans and their downloads); long workers run at a lower
CPU priority (nice 10, see DEFAULT_LANES), so an estimate stays fast while plans run. Each lane has
a fixed number of workers; a request waits for one until its deadline, and past `max_waiting` requests
running or waiting the UI answers 503 at once rather than queue without bound. A worker's start-up
(imports, catalog) is not charged to the request that waits for it.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sizeup.ui.bridge import UiError
from sizeup.ui.worker import READY, read_frame, write_frame

__all__ = ["Lane", "WorkerPool", "DEFAULT_LANES", "DEFAULT_TIME_LIMIT_S"]

STARTUP_LIMIT_S = 60.0
"""Longest a new worker may take to import sizeup and read the catalog (not charged to the request)."""
DEFAULT_TIME_LIMIT_S = 20.0
"""A request's whole time (waiting for a worker included): a long plan takes a few seconds."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Lane:
    workers: int
    nice: int = 0
    """How much lower than the server this lane's processes run (0: the same priority)."""


_ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                      "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")}
"""Each worker computes on one thread: the pool is the parallelism. A plan's numpy spreading over every
core (BLAS threads that spin while they wait) doubled an estimate's latency beside four plans."""

DEFAULT_LANES = {"quick": Lane(workers=2), "long": Lane(workers=4, nice=10)}
"""Each worker starts in a session of its own: where Linux groups scheduling by session (autogroups, on by
default on desktops), plans are then not charged to the server's share, so its pages and static files stay
fast. The long lane's nice lets quick answers go first where processes are scheduled one by one; it is not
applied to the worker's group, which would starve plans whenever the machine is busy with other work."""


class _Worker:
    """One worker process and the thread that reads its answers into a queue."""

    def __init__(self, root: Path, nice: int) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1", **_ONE_THREAD)
        with open(root / "workers.log", "ab") as log:  # a worker's own failures (an import error), for a bug report
            self.process = subprocess.Popen(
                [sys.executable, "-m", "sizeup.ui.worker", "--root", str(root), "--nice", str(nice)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env, cwd=str(root),
                start_new_session=os.name == "posix")  # its own scheduling group: see DEFAULT_LANES
        self.replies: queue.Queue = queue.Queue()
        self.started = False
        threading.Thread(target=self._read, daemon=True, name="sizeup-ui-worker-reader").start()

    def _read(self) -> None:
        try:
            while (frame := read_frame(self.process.stdout)) is not None:
                self.replies.put(frame)
        except (OSError, ValueError):
            pass
        self.replies.put(None)  # the process ended

    def ready(self, timeout_s: float) -> bool:
        """Whether the worker has started (imports, catalog) and is waiting for jobs, waiting up to `timeout_s`."""
        if not self.started:
            try:
                self.started = self.replies.get(timeout=timeout_s) == READY
            except queue.Empty:
                return False
        return self.started

    def ask(self, frame: dict, timeout_s: float) -> dict | None:
        """The answer to `frame`; None when the process died; queue.Empty past `timeout_s`."""
        try:
            write_frame(self.process.stdin, frame)
        except (OSError, ValueError):
            return None
        return self.replies.get(timeout=max(timeout_s, 0.0))

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass


class _LaneState:
    def __init__(self, lane: Lane) -> None:
        self.lane = lane
        self.slots = threading.BoundedSemaphore(lane.workers)
        self.idle: list[_Worker] = []
        self.lock = threading.Lock()


class WorkerPool:
    """`await pool.call("quick", "estimate", argv)`: the job's value, or `UiError` (400 bad input, 500 a bug,
    503 busy, 504 past the time limit)."""

    def __init__(self, root: Path, *, lanes: dict[str, Lane] | None = None,
                 time_limit_s: float = DEFAULT_TIME_LIMIT_S, max_waiting: int = 64) -> None:
        self.root = Path(root).resolve()
        self.time_limit_s = time_limit_s
        self.max_waiting = max_waiting
        self._lanes = {name: _LaneState(lane) for name, lane in (lanes or DEFAULT_LANES).items()}
        self._pending = 0
        self._workers: set[_Worker] = set()
        self._waiters = ThreadPoolExecutor(max_workers=max_waiting, thread_name_prefix="sizeup-ui-wait")
        """Threads that wait on workers: their own, so static files never queue behind them for a thread."""
        self._lock = threading.Lock()
        self._closed = False

    async def call(self, lane: str, job: str, *args: Any, limit_s: float | None = None) -> Any:
        """`limit_s`: this call's share of the time limit (a request that calls twice splits it)."""
        import asyncio

        with self._lock:
            if self._pending >= self.max_waiting:
                raise UiError(f"the UI is busy ({self._pending} requests running or waiting); try again shortly", 503)
            self._pending += 1
        try:
            limit = self.time_limit_s if limit_s is None else min(limit_s, self.time_limit_s)
            return await asyncio.get_running_loop().run_in_executor(
                self._waiters, self._call, lane, {"job": job, "args": list(args)}, limit)
        finally:
            with self._lock:
                self._pending -= 1

    def start(self, *lanes: str) -> None:
        """Open the pool (again, after `close`) and start one worker of each of `lanes` (default: all) ahead of
        the first request; they import and warm up in the background."""
        self._closed = False
        for lane in lanes or self._lanes:
            state = self._lanes[lane]
            if state.slots.acquire(blocking=False):
                try:
                    with state.lock:
                        if not state.idle:
                            state.idle.append(self._spawn(state))
                finally:
                    state.slots.release()

    def _call(self, lane: str, frame: dict, limit_s: float) -> Any:
        deadline = time.monotonic() + limit_s
        state = self._lanes[lane]
        if self._closed:
            raise UiError("the UI is shutting down", 503)
        if not state.slots.acquire(timeout=max(limit_s, 0.0)):
            raise UiError(f"no worker was free within the UI's {self.time_limit_s:g} s limit; try again shortly", 503)
        worker = None
        try:
            if deadline - time.monotonic() < 0.05:
                raise UiError(f"no worker was free within the UI's {self.time_limit_s:g} s limit; try again shortly",
                              503)
            with state.lock:
                worker = state.idle.pop() if state.idle else None
            if worker is None or not worker.alive():
                worker = self._spawn(state)
            waited = time.monotonic()
            if not worker.ready(STARTUP_LIMIT_S):
                raise UiError(f"a worker stopped or did not start within {STARTUP_LIMIT_S:g} s (see workers.log in "
                              "the UI's folder)", 503)
            deadline += time.monotonic() - waited  # a start-up is not the request's compute time
            try:
                answer = worker.ask(frame, deadline - time.monotonic())
            except queue.Empty:
                raise UiError(f"this request ran past the UI's {self.time_limit_s:g} s limit and was stopped; the "
                              "CLI runs it without a limit", 504) from None
            if answer is None:
                raise UiError("the worker computing this request stopped before answering", 500)
            with state.lock:
                state.idle.append(worker)
                worker = None
        finally:
            if worker is not None:
                worker.kill()
            state.slots.release()
        if not answer.get("ok"):
            raise UiError(answer.get("message", "the request failed"), answer.get("status", 500))
        return answer["value"]

    def _spawn(self, state: _LaneState) -> _Worker:
        worker = _Worker(self.root, state.lane.nice)
        with self._lock:
            self._workers = {w for w in self._workers if w.alive()} | {worker}
        return worker

    def close(self) -> None:
        """Stop every worker, busy ones too (their requests answer 500 at once): nothing outlives the server."""
        self._closed = True
        for state in self._lanes.values():
            with state.lock:
                state.idle = []
        with self._lock:
            workers, self._workers = self._workers, set()
        for w in workers:
            w.kill()
