"""The supervisor of `sizeup load --chaos -- COMMAND`: restart policy, backoff, crash loops, stopping."""

import signal
import sys
import time

import pytest

from sizeup.errors import ConfigError, MeasureError
from sizeup.measure.supervisor import RestartPolicy, Supervisor

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def test_backoff_doubles_up_to_its_cap():
    policy = RestartPolicy(backoff_s=1, backoff_factor=2, max_backoff_s=5)
    assert [policy.delay_s(n) for n in range(5)] == [1, 2, 4, 5, 5]


def test_which_exits_restart():
    assert RestartPolicy(restart="on-failure").restarts_after(-9)
    assert RestartPolicy(restart="on-failure").restarts_after(1)
    assert not RestartPolicy(restart="on-failure").restarts_after(0)
    assert RestartPolicy(restart="always").restarts_after(0)
    assert not RestartPolicy(restart="never").restarts_after(-9)


@pytest.mark.parametrize("kwargs", [{"restart": "sometimes"}, {"backoff_s": -1}, {"backoff_s": float("nan")},
                                    {"backoff_factor": 0.5}, {"max_restarts": -1}])
def test_bad_policies_are_refused(kwargs):
    with pytest.raises(ConfigError):
        RestartPolicy(**kwargs)


def test_an_empty_command_is_refused():
    with pytest.raises(ConfigError):
        Supervisor([])


def test_a_missing_program_is_one_line():
    with pytest.raises(MeasureError, match="cannot start"):
        Supervisor(["/nonexistent/sizeup-test-binary"]).start()


def _wait(predicate, timeout=15.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_a_killed_child_is_restarted_after_the_backoff():
    sup = Supervisor(SLEEPER, RestartPolicy(backoff_s=0.3))
    with sup:
        first = sup.pid
        killed_at, pid = sup.kill(signal.SIGKILL)
        assert pid == first
        assert _wait(lambda: sup.pid not in (None, first))
        starts = [e for e in sup.events if e.kind == "start"]
        assert len(starts) == 2 and sup.restarts == 1
        assert starts[1].time_s - killed_at >= 0.3  # the backoff was waited
        exits = [e for e in sup.events if e.kind == "exit"]
        assert exits[0].detail == "killed by SIGKILL"
    assert sup.pid is None and sup.events[-1].kind == "stopped"


def test_never_restarts_under_policy_never():
    sup = Supervisor(SLEEPER, RestartPolicy(restart="never", backoff_s=0))
    with sup:
        sup.kill()
        assert _wait(lambda: any(e.kind == "exit" for e in sup.events))
        time.sleep(0.3)
        assert sup.pid is None and sup.restarts == 0
        with pytest.raises(MeasureError, match="not running"):
            sup.kill()


def test_a_crash_loop_gives_up():
    sup = Supervisor([sys.executable, "-c", "raise SystemExit(3)"], RestartPolicy(backoff_s=0.01, max_restarts=2))
    with sup:
        assert _wait(lambda: any(e.kind == "gave-up" for e in sup.events))
    assert sup.restarts == 2
    assert [e.detail for e in sup.events if e.kind == "exit"] == ["exit code 3"] * 3


def test_stop_ends_a_child_that_ignores_sigterm():
    stubborn = [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                      "print('ready', flush=True); time.sleep(60)"]
    import subprocess

    sup = Supervisor(stubborn, stdout=subprocess.PIPE)
    sup.start()
    sup._child.stdout.readline()  # the handler is installed
    start = time.monotonic()
    sup.stop(timeout_s=0.5)
    assert time.monotonic() - start < 5 and sup.pid is None
