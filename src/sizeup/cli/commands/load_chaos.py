"""`sizeup load … --chaos AT`: the flags of a fault-injection load test and its run (not a command of its own:
`load.py` registers these flags and hands the run here).

    sizeup load http://127.0.0.1:8123/v1/chat/completions --rate 10 --duration 40s --chaos 10s \\
        -- sizeup serve-model llama-3.2-1b --tiny --port 8123
"""

from __future__ import annotations

import argparse
import sys
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sizeup.cli.flags import DURATION_S
from sizeup.units import format_seconds, number_flag

if TYPE_CHECKING:
    from sizeup.measure.chaos import Fault
    from sizeup.measure.supervisor import Supervisor

__all__ = ["add_chaos_arguments", "ChaosSetup", "prepare", "run_with_chaos", "render_chaos"]

_SECONDS_0 = number_flag(minimum=0, maximum=30 * 86_400.0, unit="s")


def _split_at_dashes(parser: argparse.ArgumentParser, dest: str) -> None:
    """Everything after the first `--` becomes `args.<dest>` (a list) and is not parsed as flags: argparse's
    REMAINDER after a positional would swallow the flags that follow the URL."""
    original = parser.parse_known_args

    def parse_known_args(self, args=None, namespace=None):
        args = list(sys.argv[1:] if args is None else args)
        cut = args.index("--") if "--" in args else len(args)
        namespace, extra = original(args[:cut], namespace)
        setattr(namespace, dest, args[cut + 1:])
        return namespace, extra

    parser.parse_known_args = types.MethodType(parse_known_args, parser)  # type: ignore[method-assign]
    parser.set_defaults(**{dest: []})


def add_chaos_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("fault injection (--chaos)")
    g.add_argument("--chaos", type=_SECONDS_0, metavar="AT",
                   help="end the serving process AT into the test (e.g. 10s) and report the outage: error window, "
                        "time to first good response, requests lost, tail latency during recovery. The target: "
                        "a command after -- (started and restarted here), --chaos-pid or --chaos-pod")
    g.add_argument("--signal", default="KILL", help="the signal sent (default KILL: a crash)")
    g.add_argument("--chaos-pid", type=number_flag(integer=True, minimum=1, maximum=2**31), metavar="PID",
                   help="a server another supervisor restarts (systemd, Docker)")
    g.add_argument("--chaos-pod", metavar="NAME", help="a Kubernetes pod, deleted with kubectl (forced, no grace)")
    g.add_argument("--namespace", help="the pod's namespace (default: kubectl's)")
    g.add_argument("--restart", default="on-failure", choices=["always", "on-failure", "never"],
                   help="restart policy of the command after -- (default on-failure)")
    g.add_argument("--backoff", type=_SECONDS_0, default="1s",
                   help="wait before the first restart, doubled each time (default 1s)")
    g.add_argument("--max-backoff", type=_SECONDS_0, default="30s", help="cap of the restart wait (default 30s)")
    g.add_argument("--startup-timeout", type=DURATION_S, default="120s",
                   help="how long the command after -- may take to answer on the URL's port (default 120s)")
    g.add_argument("--recovery", type=DURATION_S, metavar="TIME",
                   help="the recovery time promised (default: the --sla scenario's fault plan)")
    g.add_argument("--recovery-window", type=DURATION_S, default="10s",
                   help="tail latency during recovery is read over the requests of this long after it (default 10s)")
    _split_at_dashes(p, "serve_command")
    p.epilog = ("-- COMMAND …: with --chaos, the server to start, keep running under --restart and end at AT, e.g. "
                "sizeup load http://127.0.0.1:8000/v1/chat/completions --rate 10 --duration 40s --chaos 10s -- "
                "sizeup serve-model llama-3.2-1b --tiny --port 8000")


@dataclass(frozen=True, slots=True)
class ChaosSetup:
    fault: Fault
    supervisor: Supervisor | None
    startup_timeout_s: float
    window_s: float
    promised_s: float | None
    promise_source: str


def prepare(args: argparse.Namespace, scenario=None) -> ChaosSetup | None:
    """The fault, supervisor and promise the flags ask for (None: no --chaos and no command); every check
    before the first request."""
    from sizeup.errors import ConfigError

    command = list(args.serve_command or [])
    if args.chaos is None:
        if command or args.chaos_pid or args.chaos_pod:
            raise ConfigError("a command after --, --chaos-pid and --chaos-pod are the target of --chaos: give "
                              "--chaos AT too")
        return None
    from sizeup.measure.chaos import Fault, check_target, parse_signal
    from sizeup.measure.supervisor import RestartPolicy, Supervisor

    if args.rate is None:
        raise ConfigError("--chaos needs --rate (open loop): with --concurrency a refused request is retried at "
                          "once, and requests lost would count the retries")
    if args.duration is None or args.chaos >= args.duration:
        raise ConfigError(f"--chaos {args.chaos:g}s: expected a moment before the end of --duration")
    given = [name for name, value in (("a command after --", command), ("--chaos-pid", args.chaos_pid),
                                      ("--chaos-pod", args.chaos_pod)) if value]
    if len(given) > 1:
        raise ConfigError(f"{given[0]} and {given[1]} both name the target of --chaos: give one")
    fault = Fault(at_s=args.chaos, signal=parse_signal(args.signal), pid=args.chaos_pid, pod=args.chaos_pod,
                  namespace=args.namespace)
    supervisor = None
    if command:
        policy = RestartPolicy(restart=args.restart, backoff_s=args.backoff, max_backoff_s=args.max_backoff)
        supervisor = Supervisor(command, policy)
    check_target(fault, supervisor)
    promised, source = args.recovery, "--recovery" if args.recovery is not None else ""
    if promised is None and scenario is not None:
        from sizeup.plan.fault import scenario_promise

        promise = scenario_promise(scenario)
        promised, source = promise.seconds, f"the fault plan of {args.sla}: {promise.basis}"
    return ChaosSetup(fault=fault, supervisor=supervisor, startup_timeout_s=args.startup_timeout,
                      window_s=args.recovery_window, promised_s=promised, promise_source=source)


def run_with_chaos(setup: ChaosSetup, cfg, progress):
    """Start the supervised command (if any), wait for its port, run the load with the fault, stop it; the load
    result and the chaos report."""
    from sizeup.measure.chaos import FaultRecord, analyse, injector, wait_reachable
    from sizeup.measure.loadtest import run_load

    supervisor = setup.supervisor
    record = FaultRecord()
    if supervisor is not None:
        supervisor.start()
    try:
        if supervisor is not None:
            wait_reachable(cfg.url, setup.startup_timeout_s, alive=lambda: supervisor.pid is not None)
        result = run_load(cfg, progress=progress, beside=injector(setup.fault, supervisor, record))
    finally:
        if supervisor is not None:
            supervisor.stop()
    timeline = tuple(supervisor.timeline(origin_s=record.at)) if supervisor is not None and record.at else ()
    return result, analyse(result, setup.fault, record, window_s=setup.window_s, promised_s=setup.promised_s,
                           promise_source=setup.promise_source, timeline=timeline)


def _ms(value: float | None) -> str:
    return "n/a" if value is None else format_seconds(value)


def render_chaos(report) -> list[str]:
    d = report.to_dict()
    lines = [f"\nfault: {d['fault'] or report.fault.target}"
             + (f" at {format_seconds(d['fault_at_s'])} into the test" if d["fault_at_s"] is not None else "")]
    if d["fault_error"]:
        lines.append(f"fault not injected: {d['fault_error']}")
    lost = ", ".join(f"{k} {v}" for k, v in sorted(d["lost"].items(), key=lambda kv: -kv[1])) or "none"
    lines.append(f"requests lost: {d['requests_lost']} ({lost}); {d['cut_in_flight']} of them cut in flight")
    window = d["error_window"]
    if window:
        lines.append(f"error window: {format_seconds(window['length_s'])} (first failure {_ms(window['first_error_s'])}"
                     f" after the fault, last {_ms(window['last_error_s'])})")
    lines.append(f"time to first good response: {_ms(d['time_to_first_good_response_s'])}; recovered (no failure "
                 f"since): {_ms(d['recovery_s'])}")
    for name, part in (("before the fault", d["before"]), ("during recovery", d["during_recovery"])):
        e2e = part.get("e2e_s", {}) if part else {}
        if e2e:
            lines.append(f"end-to-end {name}: P50 {_ms(e2e.get('p50'))}, P95 {_ms(e2e.get('p95'))}, "
                         f"P99 {_ms(e2e.get('p99'))} over {int(part['requests']['count'])} requests")
    if d["promised_recovery_s"] is not None:
        lines.append(f"recovery promised {format_seconds(d['promised_recovery_s'])} ({d['promise_source']}): "
                     f"{'met' if d['met'] else 'MISSED'}")
    elif d["promise_source"]:
        lines.append(f"recovery promised: none ({d['promise_source']})")
    for event in d["timeline"]:
        lines.append(f"  {event['at_s']:+.3f} s  {event['kind']}" + (f" pid {event['pid']}" if event["pid"] else "")
                     + (f" ({event['detail']})" if event["detail"] else ""))
    lines.extend(f"note: {n}" for n in d["notes"])
    return lines
