"""A small process supervisor: start a command, restart it when it exits by a restart policy with exponential
backoff, and keep a timeline of what happened (start, exit, restart), for `sizeup load --chaos -- COMMAND`.

The policy has the shape of Kubernetes' container restarts (kubernetes.io/docs/concepts/workloads/pods/
pod-lifecycle/#container-restarts, read 2026-12-04: "the kubelet restarts them with an exponential backoff delay
(10s, 20s, 40s, …), that is capped at 300 seconds"; a container that has run 10 minutes resets it) and of
systemd's `Restart=` (always, on-failure, no). Our defaults are shorter (first delay 1 s, cap 30 s, reset after
60 s of running): a local server restarts in seconds, and the load test should see it come back.

Each child runs in a session of its own, so stopping it (or killing it for a chaos test) reaches a shell's
children too. Timestamps are `time.perf_counter()`, the load test's clock.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sizeup.errors import ConfigError, MeasureError

__all__ = ["RESTART_POLICIES", "RestartPolicy", "SupervisorEvent", "Supervisor"]

RESTART_POLICIES = ("always", "on-failure", "never")


@dataclass(frozen=True, slots=True, kw_only=True)
class RestartPolicy:
    restart: str = "on-failure"
    """always | on-failure (an exit code other than 0, or a signal) | never"""
    backoff_s: float = 1.0
    """Delay before the first restart."""
    backoff_factor: float = 2.0
    """Each further restart waits this many times longer ..."""
    max_backoff_s: float = 30.0
    """... up to this cap."""
    reset_after_s: float = 60.0
    """A child that ran this long before exiting restarts after `backoff_s` again."""
    max_restarts: int = 20
    """After this many restarts the supervisor gives up (a crash loop)."""

    def __post_init__(self) -> None:
        if self.restart not in RESTART_POLICIES:
            raise ConfigError(f"--restart {self.restart!r}: expected one of {', '.join(RESTART_POLICIES)}")
        for name in ("backoff_s", "max_backoff_s", "reset_after_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ConfigError(f"restart {name} {value!r}: expected a number of seconds >= 0")
        if not (isinstance(self.backoff_factor, (int, float)) and 1 <= self.backoff_factor <= 100):
            raise ConfigError(f"restart backoff factor {self.backoff_factor!r}: expected 1 to 100")
        if isinstance(self.max_restarts, bool) or not isinstance(self.max_restarts, int) or self.max_restarts < 0:
            raise ConfigError(f"max restarts {self.max_restarts!r}: expected a count >= 0")

    def delay_s(self, restarts: int) -> float:
        """The wait before restart number `restarts` + 1 (0: the first)."""
        return min(self.max_backoff_s, self.backoff_s * self.backoff_factor ** restarts)

    def restarts_after(self, returncode: int) -> bool:
        return self.restart == "always" or (self.restart == "on-failure" and returncode != 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class SupervisorEvent:
    time_s: float
    """`time.perf_counter()` when it happened."""
    kind: str
    """start | exit | restart-wait | gave-up | stopped"""
    pid: int | None = None
    detail: str = ""

    def to_dict(self, origin_s: float = 0.0) -> dict[str, Any]:
        return {"at_s": round(self.time_s - origin_s, 6), "kind": self.kind, "pid": self.pid, "detail": self.detail}


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"


@dataclass(slots=True)
class Supervisor:
    """Run `command` under `policy` from a background thread until `stop()`."""

    command: Sequence[str]
    policy: RestartPolicy = field(default_factory=RestartPolicy)
    stdout: int | None = subprocess.DEVNULL
    stderr: int | None = subprocess.DEVNULL
    env: dict[str, str] | None = None
    events: list[SupervisorEvent] = field(default_factory=list)
    _child: subprocess.Popen | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if not self.command or not all(isinstance(c, str) and c for c in self.command):
            raise ConfigError("the supervised command is empty: give it after --")

    @property
    def pid(self) -> int | None:
        """The running child's pid, or None between runs."""
        with self._lock:
            child = self._child
        return child.pid if child is not None and child.poll() is None else None

    @property
    def restarts(self) -> int:
        return sum(1 for e in self.events if e.kind == "start") - 1 if self.events else 0

    def _note(self, kind: str, pid: int | None = None, detail: str = "") -> None:
        self.events.append(SupervisorEvent(time_s=time.perf_counter(), kind=kind, pid=pid, detail=detail))

    def _spawn(self) -> subprocess.Popen:
        try:
            child = subprocess.Popen(list(self.command), stdin=subprocess.DEVNULL, stdout=self.stdout,
                                     stderr=self.stderr, env=self.env, start_new_session=True)
        except OSError as e:
            raise MeasureError(f"cannot start {self.command[0]!r}: {e.strerror or e}") from None
        self._note("start", child.pid)
        return child

    def start(self) -> None:
        """Start the command (an error here, such as a missing program, is raised) and the watching thread."""
        with self._lock:
            self._child = self._spawn()
        self._thread = threading.Thread(target=self._loop, name="sizeup-supervisor", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        restarts = 0
        while not self._stop.is_set():
            with self._lock:
                child = self._child
            started = time.perf_counter()
            returncode = child.wait()
            ran_s = time.perf_counter() - started
            if self._stop.is_set():
                return
            self._note("exit", child.pid, _describe_exit(returncode))
            if not self.policy.restarts_after(returncode):
                return
            if restarts >= self.policy.max_restarts:
                self._note("gave-up", None, f"{restarts} restarts")
                return
            if ran_s >= self.policy.reset_after_s:
                restarts = 0
            delay = self.policy.delay_s(restarts)
            self._note("restart-wait", None, f"{delay:g} s")
            if self._stop.wait(delay):
                return
            restarts += 1
            try:
                with self._lock:
                    self._child = self._spawn()
            except MeasureError as e:
                self._note("gave-up", None, str(e))
                return

    def kill(self, sig: int = signal.SIGKILL) -> tuple[float, int]:
        """Send `sig` to the running child's process group (a chaos fault); (time, pid). MeasureError when no
        child runs."""
        with self._lock:
            child = self._child
        if child is None or child.poll() is not None:
            raise MeasureError("the supervised command is not running: nothing to kill")
        at = time.perf_counter()
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            raise MeasureError(f"process {child.pid} exited before the fault") from None
        return at, child.pid

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop supervising and end the child: SIGTERM to its group, SIGKILL after `timeout_s`."""
        self._stop.set()
        with self._lock:
            child = self._child
        if child is not None and child.poll() is None:
            for sig, wait in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, timeout_s)):
                try:
                    os.killpg(child.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    child.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if self._thread is not None:
            self._thread.join(timeout_s)
        self._note("stopped")

    def __enter__(self) -> Supervisor:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def timeline(self, origin_s: float = 0.0) -> list[dict[str, Any]]:
        return [e.to_dict(origin_s) for e in self.events]
