"""Fault injection during a load test (`sizeup load … --chaos AT`): end the serving process at a stated moment
and read the outage off the requests themselves.

The fault goes to one of three targets:
- a command the load test started under `--` and keeps running under a restart policy (measure/supervisor.py):
  SIGKILL (or the signal asked for) to its process group;
- a named PID (a server that systemd, Docker or another supervisor restarts): the signal to that process;
- a Kubernetes pod by name: `kubectl delete pod NAME --grace-period=0 --force --wait=false`, the forced deletion
  of kubernetes.io/docs/tasks/run-application/force-delete-stateful-set-pod/ (read 2026-12-04); its ReplicaSet
  starts a new pod while the Service sends traffic to the others.

What is measured, every time relative to the fault (`analyse`):
- requests lost: requests that failed after it (cut in flight, refused, timed out, answered with an error), by
  reason;
- the error window: from the first to the last failure after the fault;
- time to first good response: the first token (HTTP API: the answer) of the first request sent after the fault
  that succeeded;
- recovered: the first good response after the last failure (with a standby replica, good answers go on during
  the window: the service has recovered only when the failures stop); with a single server the two agree;
- tail latency during recovery: percentiles of the requests sent in the `window_s` after recovery, beside those
  that finished before the fault.

Open-loop arrivals (`--rate`) are required: with a closed loop each refused request is retried at once, and the
count of lost requests would measure the client's retry speed, not the outage.
"""

from __future__ import annotations

import asyncio
import math
import os
import shutil
import signal as signals
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sizeup.errors import ConfigError, MeasureError
from sizeup.measure.loadtest import LoadResult, RequestRecord, describe_error, percentiles
from sizeup.measure.load_inputs import redact_url

if TYPE_CHECKING:
    from sizeup.measure.supervisor import Supervisor

__all__ = ["Fault", "FaultRecord", "ChaosReport", "parse_signal", "check_target", "injector", "analyse", "wait_reachable"]

DEFAULT_WINDOW_S = 10.0
"""Tail latency 'during recovery' is read over the requests sent in this long after recovery."""
KUBECTL_TIMEOUT_S = 30.0


def parse_signal(name: str) -> int:
    """'KILL', 'SIGTERM', '9' -> the signal number; ConfigError for anything else."""
    text = str(name).strip().upper()
    if text.isdigit():
        number = int(text)
        if number in {s.value for s in signals.Signals}:
            return number
    else:
        text = text if text.startswith("SIG") else "SIG" + text
        if text in signals.Signals.__members__:
            return int(signals.Signals[text])
    raise ConfigError(f"--signal {name!r}: expected a signal name like KILL, TERM or INT (or its number)")


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    at_s: float
    """Seconds after the load test's first request."""
    signal: int = int(signals.SIGKILL)
    pid: int | None = None
    pod: str | None = None
    namespace: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.at_s, bool) or not isinstance(self.at_s, (int, float)) or not math.isfinite(self.at_s) \
                or self.at_s < 0:
            raise ConfigError(f"--chaos {self.at_s!r}: expected a time into the test >= 0 (e.g. 10s)")
        if self.pid is not None and self.pod is not None:
            raise ConfigError("give --chaos-pid or --chaos-pod, not both")
        if self.pod is not None and not _is_k8s_name(self.pod):
            raise ConfigError(f"--chaos-pod {self.pod!r}: expected a pod name (lower-case letters, digits, '-', '.')")
        if self.namespace is not None and not _is_k8s_name(self.namespace):
            raise ConfigError(f"--namespace {self.namespace!r}: expected a namespace name")

    @property
    def target(self) -> str:
        if self.pod is not None:
            return f"pod {self.pod}" + (f" (namespace {self.namespace})" if self.namespace else "")
        if self.pid is not None:
            return f"pid {self.pid}"
        return "the supervised command"


def _is_k8s_name(name: str) -> bool:
    """A DNS subdomain name (RFC 1123) as Kubernetes object names are: at most 253 characters."""
    import re

    return isinstance(name, str) and len(name) <= 253 and \
        re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", name) is not None


def _kubectl(fault: Fault, *args: str) -> list[str]:
    exe = shutil.which("kubectl")
    if exe is None:
        raise MeasureError("--chaos-pod needs kubectl on the PATH (none found)")
    return [exe, *(["--namespace", fault.namespace] if fault.namespace else []), *args]


def check_target(fault: Fault, supervisor: Supervisor | None) -> None:
    """Before the first request: the target exists (a running pid, a pod kubectl can see, a supervised command)."""
    if fault.pod is not None:
        cmd = _kubectl(fault, "get", "pod", fault.pod, "-o", "name")
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=KUBECTL_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise MeasureError(f"kubectl get pod {fault.pod}: {e}") from None
        if done.returncode != 0:
            why = (done.stderr.strip().splitlines() or ["no reason given"])[-1][:200]
            raise MeasureError(f"kubectl cannot see pod {fault.pod!r}: {why}")
    elif fault.pid is not None:
        if fault.pid == os.getpid():
            raise ConfigError(f"--chaos-pid {fault.pid}: that is this load test's own process")
        try:
            os.kill(fault.pid, 0)
        except ProcessLookupError:
            raise MeasureError(f"--chaos-pid {fault.pid}: no such process") from None
        except PermissionError:
            raise MeasureError(f"--chaos-pid {fault.pid}: no permission to signal it") from None
    elif supervisor is None:
        raise ConfigError("--chaos needs a target: a command after --, --chaos-pid PID or --chaos-pod NAME")


@dataclass(slots=True)
class FaultRecord:
    """What the injector did: when (perf_counter), to whom, and whether it worked."""

    at: float | None = None
    pid: int | None = None
    error: str | None = None
    detail: str = ""


def _inject(fault: Fault, supervisor: Supervisor | None, record: FaultRecord) -> None:
    if fault.pod is not None:
        cmd = _kubectl(fault, "delete", "pod", fault.pod, "--grace-period=0", "--force", "--wait=false")
        record.at = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=KUBECTL_TIMEOUT_S)
        if done.returncode != 0:
            record.error = f"kubectl delete pod {fault.pod} failed: " + \
                (done.stderr.strip().splitlines() or ["no reason given"])[-1][:200]
        record.detail = "kubectl delete pod --grace-period=0 --force"
    elif fault.pid is not None:
        record.at, record.pid = time.perf_counter(), fault.pid
        os.kill(fault.pid, fault.signal)
        record.detail = f"{signals.Signals(fault.signal).name} to pid {fault.pid}"
    else:
        assert supervisor is not None
        record.at, record.pid = supervisor.kill(fault.signal)
        record.detail = f"{signals.Signals(fault.signal).name} to the process group of pid {record.pid}"


def injector(fault: Fault, supervisor: Supervisor | None, record: FaultRecord) -> Callable[[float], Any]:
    """The coroutine function `run_load(beside=…)` runs: wait until `at_s` into the test, inject the fault
    (from a thread: kubectl may take a while), and note what happened in `record` (errors too: the test goes on)."""

    async def inject(start: float) -> None:
        await asyncio.sleep(max(0.0, start + fault.at_s - time.perf_counter()))
        try:
            await asyncio.to_thread(_inject, fault, supervisor, record)
        except (MeasureError, OSError, subprocess.SubprocessError) as e:
            record.error = str(e)

    return inject


@dataclass(frozen=True, slots=True, kw_only=True)
class ChaosReport:
    fault: Fault
    fault_at_s: float | None
    """Seconds into the test when the fault was injected (None: it was not)."""
    fault_error: str | None
    fault_detail: str
    lost: dict[str, int]
    """Requests that failed after the fault, by reason."""
    cut_in_flight: int
    """Of those, sent before the fault."""
    error_window_s: tuple[float, float] | None
    """(first, last) failure after the fault, seconds after it."""
    first_good_s: float | None
    recovered_s: float | None
    """First good response after the last failure, seconds after the fault; None: not within the test."""
    before: dict[str, dict[str, float]]
    during_recovery: dict[str, dict[str, float]]
    window_s: float
    promised_s: float | None = None
    promise_source: str = ""
    timeline: tuple[dict[str, Any], ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def requests_lost(self) -> int:
        return sum(self.lost.values())

    @property
    def met(self) -> bool | None:
        if self.promised_s is None:
            return None
        return self.recovered_s is not None and self.recovered_s <= self.promised_s

    def to_dict(self) -> dict[str, Any]:
        window = None if self.error_window_s is None else {
            "first_error_s": self.error_window_s[0], "last_error_s": self.error_window_s[1],
            "length_s": self.error_window_s[1] - self.error_window_s[0]}
        return {"target": self.fault.target, "fault_at_s": self.fault_at_s, "fault": self.fault_detail,
                "fault_error": self.fault_error, "requests_lost": self.requests_lost, "lost": self.lost,
                "lost_reasons": {k: describe_error(k) for k in self.lost}, "cut_in_flight": self.cut_in_flight,
                "error_window": window, "time_to_first_good_response_s": self.first_good_s,
                "recovery_s": self.recovered_s, "before": self.before, "during_recovery": self.during_recovery,
                "recovery_window_s": self.window_s, "promised_recovery_s": self.promised_s,
                "promise_source": self.promise_source, "met": self.met, "timeline": list(self.timeline),
                "notes": list(self.notes)}


def _answered(r: RequestRecord) -> float | None:
    """When a good request's first answer arrived (a token, or the whole answer of a plain HTTP request)."""
    return r.first_token if r.first_token is not None else r.end


def _latencies(records: list[RequestRecord]) -> dict[str, dict[str, float]]:
    return {"requests": {"count": float(len(records))}, "ttft_s": percentiles([r.ttft_s for r in records]),
            "e2e_s": percentiles([r.e2e_s for r in records])}


def analyse(result: LoadResult, fault: Fault, record: FaultRecord, *, window_s: float = DEFAULT_WINDOW_S,
            promised_s: float | None = None, promise_source: str = "",
            timeline: tuple[dict[str, Any], ...] = ()) -> ChaosReport:
    """The outage read off the requests of `result` around the fault of `record`."""
    notes: list[str] = []
    base = dict(fault=fault, fault_detail=record.detail, fault_error=record.error, window_s=window_s,
                promised_s=promised_s, promise_source=promise_source, timeline=timeline)
    if record.at is None:
        notes.append("the fault was not injected (the test ended first, or the injection failed)")
        return ChaosReport(fault_at_s=None, lost={}, cut_in_flight=0, error_window_s=None, first_good_s=None,
                           recovered_s=None, before=_latencies([r for r in result.records if r.status == "ok"]),
                           during_recovery={}, notes=tuple(notes), **base)
    t0 = record.at
    ended = [r for r in result.records if r.finished is not None]
    failed = [r for r in ended if r.status != "ok" and r.finished >= t0]
    lost: dict[str, int] = {}
    for r in failed:
        lost[r.status] = lost.get(r.status, 0) + 1
    good_after = sorted((r for r in ended if r.status == "ok" and r.start >= t0), key=_answered)
    first_good = _answered(good_after[0]) - t0 if good_after else None
    window = None
    recovered = None
    if failed:
        first_fail = min(r.finished for r in failed) - t0
        last_fail = max(r.finished for r in failed) - t0
        window = (first_fail, last_fail)
        last_start = max(r.start for r in failed)
        after = [r for r in good_after if r.start >= last_start]
        recovered = _answered(after[0]) - t0 if after else None
    else:
        recovered = 0.0
        notes.append("no request failed after the fault: the service absorbed it")
    if recovered is None:
        notes.append("no good response after the last failure: not recovered within the test (run it longer)")
    before = [r for r in ended if r.status == "ok" and r.finished < t0]
    during = [] if recovered is None else \
        [r for r in good_after if t0 + recovered <= r.start < t0 + recovered + window_s]
    if recovered is not None and not during:
        notes.append(f"no request was sent in the {window_s:g} s after recovery: no latency during recovery")
    if fault.pod is not None:
        notes.append("a deleted pod is replaced by a new one under another name; the Service routes around it")
    return ChaosReport(fault_at_s=t0 - result.started_s, lost=lost,
                       cut_in_flight=sum(1 for r in failed if r.start < t0), error_window_s=window,
                       first_good_s=first_good, recovered_s=recovered, before=_latencies(before),
                       during_recovery=_latencies(during) if during else {}, notes=tuple(notes), **base)


def wait_reachable(url: str, timeout_s: float, alive: Callable[[], bool] = lambda: True,
                   poll_s: float = 0.05) -> float:
    """Wait until something accepts connections at `url`'s host and port (a server starting up); the seconds
    waited. MeasureError after `timeout_s`, or as soon as `alive()` says the process is gone."""
    from sizeup.measure.loadtest import check_reachable

    start = time.perf_counter()
    while True:
        try:
            check_reachable(url, timeout_s=1.0)
            return time.perf_counter() - start
        except MeasureError:
            pass
        waited = time.perf_counter() - start
        if waited > timeout_s:
            raise MeasureError(f"nothing answered at {redact_url(url)} within {timeout_s:g} s of starting the command")
        if not alive() and waited > 1.0:
            raise MeasureError(f"the command after -- exited before anything answered at {redact_url(url)}")
        time.sleep(poll_s)
