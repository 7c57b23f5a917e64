"""The recovery a serving plan promises when one replica fails, for the sheet's fault plan and for
`sizeup load --chaos --sla SCENARIO` to test against.

With a spare replica (N + 1), a replica that stops answering leaves the Service's rotation when its readiness
probe has failed `failureThreshold` times in a row, and the others carry its share. The deploy files
(report/deploy.py) probe every `periodSeconds` 10 with `failureThreshold` 3 and Kubernetes' default
`timeoutSeconds` 1 (kubernetes.io/docs/tasks/configure-pod-container/configure-liveness-readiness-startup-probes/,
"Configure Probes", read 2026-12-04). The worst case is a replica that hangs just after a passing probe: its
next probe comes at most one period later and the third failure ends threshold × period + timeout after the
hang, 31 s — the seeds' "switching to a standby within 30 s". A process that exits is faster (the pod turns
unready when its container ends). Endpoint propagation to kube-proxy is not bounded by Kubernetes and is not
added.

Without a spare there is no standby: recovery is the restart (backoff from 10 s) and the model's reload, which
depend on the image and the storage: no bound is promised.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["READINESS_PROBE", "RecoveryPromise", "recovery_promise", "scenario_promise"]

READINESS_PROBE = {"periodSeconds": 10, "failureThreshold": 3, "timeoutSeconds": 1}
"""The readiness probe of the deploy files (report/deploy.py writes period and threshold; timeoutSeconds is
Kubernetes' default). tests/plan/test_fault.py checks the manifests agree."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecoveryPromise:
    seconds: float | None
    """None: no standby, no bound promised."""
    basis: str

    def to_dict(self) -> dict:
        return {"recovery_s": self.seconds, "basis": self.basis}


def recovery_promise(spare: bool) -> RecoveryPromise:
    """What the fault plan promises for one failed replica, with or without a spare."""
    p = READINESS_PROBE
    if not spare:
        return RecoveryPromise(seconds=None, basis="no standby replica: recovery is a restart (backoff from 10 s) "
                                                   "and the model's reload, not bounded here")
    seconds = p["periodSeconds"] * p["failureThreshold"] + p["timeoutSeconds"]
    return RecoveryPromise(seconds=float(seconds),
                           basis=f"the spare carries the load once the failed replica's readiness probe (every "
                                 f"{p['periodSeconds']} s, {p['timeoutSeconds']} s timeout) fails "
                                 f"{p['failureThreshold']} times: {p['failureThreshold']} x {p['periodSeconds']} s + "
                                 f"{p['timeoutSeconds']} s")


def scenario_promise(scenario) -> RecoveryPromise:
    """The promise for a scenario before it is planned, by the planner's rule for spares (plan/serving.py
    `_spare`): `constraints.redundancy` when given, else a spare on rented capacity and none on owned hardware
    (a scenario listing owned cards is taken to run on them)."""
    from sizeup.plan.scenario import SERVING_TASKS

    if scenario.task not in SERVING_TASKS:
        return RecoveryPromise(seconds=None, basis=f"a {scenario.task} scenario plans no serving replicas: no recovery "
                                                   "is promised")
    c = scenario.constraints
    if c.redundancy is not None:
        return recovery_promise(c.redundancy)
    if c.owned:
        promise = recovery_promise(False)
        return RecoveryPromise(seconds=None, basis=promise.basis + " (owned hardware keeps no spare unless "
                                                                     "constraints.redundancy is true)")
    promise = recovery_promise(True)
    return RecoveryPromise(seconds=promise.seconds, basis=promise.basis + " (rented capacity keeps an N+1 spare)")
