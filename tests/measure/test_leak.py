import argparse
import json
import mmap
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from sizeup.errors import ConfigError, MeasureError
from sizeup.measure.leak import (LeakStatus, LeakWatch, Trend, WatchResult, fit_trend, plot_trend, sample_process,
                                 sawtooth_minima, theil_sen, verdict, watch)
from sizeup.store import Store
from sizeup.units import MEGA

HOUR_S = 3600.0

# A child that leaks at LEAK_MB_PER_MIN (MB = 10**6 bytes) on a schedule kept against the clock, under a step
# sawtooth: a temporary buffer grows by TOOTH_MB/3 every quarter period and is freed at the end of it. Memory comes
# from anonymous mmaps with every page written, so it is resident at once and returned to the OS on close.
CHILD = textwrap.dedent("""
    import mmap, sys, time
    MB, PAGE = 10**6, mmap.PAGESIZE
    rate = float(sys.argv[1]) * MB / 60.0
    tooth_mb, period_s, duration_s = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])

    def grab(n):
        m = mmap.mmap(-1, n)
        for i in range(0, n, PAGE):
            m[i] = 1
        return m

    leaked, kept, temp, levels = 0, [], [], 4
    print("ready", flush=True)
    start = time.monotonic()
    while (now := time.monotonic() - start) < duration_s:
        want = int(rate * now) // PAGE * PAGE
        if want > leaked:
            kept.append(grab(want - leaked))
            leaked = want
        level = int((now % period_s) / period_s * levels)
        while len(temp) < level:
            temp.append(grab(int(tooth_mb * MB / (levels - 1))))
        if level == 0 and temp:
            for m in temp:
                m.close()
            temp.clear()
        time.sleep(0.02)
""")


def start_child(leak_mb_per_min: float, tooth_mb: float = 15.0, period_s: float = 2.0, duration_s: float = 60.0):
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(leak_mb_per_min), str(tooth_mb), str(period_s),
                             str(duration_s)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


@pytest.fixture
def child():
    procs = []

    def make(*args, **kwargs):
        procs.append(start_child(*args, **kwargs))
        return procs[-1]

    yield make
    for proc in procs:
        proc.kill()
        proc.wait()


def no_such_pid() -> int:
    return int(Path("/proc/sys/kernel/pid_max").read_text()) + 1


# ---- watching real processes ---------------------------------------------------------------------------------


def test_leaking_child_is_flagged_with_its_rate(child, tmp_path):
    truth_bytes_per_hour = 50 * MEGA * 60  # 50 MB/min
    proc = child(50)
    seen = []
    with Store(tmp_path / "runs.sqlite") as store:
        result = watch(pid=proc.pid, interval_s=0.2, duration_s=15.0, store=store, on_sample=seen.append)
        run = store.run(result.run_id)
    assert result.ended == "duration" and 70 <= len(result.samples) <= 77 and len(seen) == len(result.samples)
    assert result.status is LeakStatus.LEAKING
    slope = result.trend.slope_bytes_per_hour
    assert slope == pytest.approx(truth_bytes_per_hour, rel=0.2)
    low, high = result.trend.band_bytes_per_hour
    assert 0 < low <= slope <= high and result.trend.confidence > 0.95
    assert result.trend.points >= 5  # fitted over the sawtooth's minima, not all samples
    assert result.verdict.startswith("leaking at ") and "MB/hour (confidence" in result.verdict
    assert run.kind == "watch" and run.status == "ok" and run.point_count == len(result.samples)
    point = run.points[-1]
    assert point.phase == "rss" and point.throughput_per_s is None
    assert point.peak_memory_bytes == result.samples[-1].rss_bytes == point.extra["rss_bytes"]
    assert point.extra["elapsed_s"] == pytest.approx(15.0, abs=0.5)
    print(f"measured {slope / MEGA:,.0f} MB/hour, truth {truth_bytes_per_hour / MEGA:,.0f}")


def test_sawtooth_without_growth_is_stable(child):
    proc = child(0, tooth_mb=15.0, period_s=1.0)
    result = watch(pid=proc.pid, interval_s=0.2, duration_s=8.0)
    memory = [s.memory_bytes for s in result.samples]
    assert max(memory) - min(memory) > 10 * MEGA  # the sawtooth is there ...
    assert result.status is LeakStatus.STABLE and result.verdict == "stable"  # ... and is not called a leak
    assert abs(result.trend.slope_bytes_per_hour) < 10 * MEGA


def test_watch_ends_when_the_process_exits_and_terminates_its_command():
    script = "import time; time.sleep(0.7)"
    result = watch(command=[sys.executable, "-c", script], interval_s=0.1, duration_s=30.0)
    assert result.ended == "exited" and 3 <= len(result.samples) <= 12
    assert result.command == (sys.executable, "-c", script)
    # a command still running at the end of the duration is terminated
    result = watch(command=[sys.executable, "-c", "import time; time.sleep(60)"], interval_s=0.1, duration_s=0.5)
    assert result.ended == "duration"
    with pytest.raises(MeasureError, match="no process with pid"):
        sample_process(result.pid)


def test_ctrl_c_keeps_what_was_sampled(tmp_path):
    def interrupt_at_third(sample, seen=[]):
        seen.append(sample)
        if len(seen) == 3:
            raise KeyboardInterrupt

    with Store(tmp_path / "runs.sqlite") as store:
        result = watch(pid=os.getpid(), interval_s=0.05, duration_s=30.0, store=store, on_sample=interrupt_at_third)
        run = store.run(result.run_id)
    assert result.ended == "interrupted" and len(result.samples) == 3 and result.trend is not None
    assert run.status == "interrupted" and run.point_count == 3


def test_sample_process_reads_this_process_and_children():
    own = sample_process(os.getpid())
    assert own.rss_bytes > MEGA and own.children_rss_bytes is None and own.gpu_memory_bytes is None
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        both = sample_process(os.getpid(), children=True, gpu=True)
        assert both.children_rss_bytes > 0 and both.memory_bytes == both.rss_bytes + both.children_rss_bytes
        # no NVML here -> None; with NVML, 0 for a process that holds no GPU memory
        assert both.gpu_memory_bytes in (None, 0) or both.gpu_memory_bytes > 0
    finally:
        proc.kill()
        proc.wait()
    with pytest.raises(MeasureError, match=f"no process with pid {no_such_pid()}"):
        sample_process(no_such_pid())


def fake_nvml(processes):
    """A stand-in for `pynvml` (nvidia-ml-py), which needs a GPU and its driver: one device, these processes."""
    from types import SimpleNamespace

    class NVMLError(Exception):
        pass

    def graphics(handle):
        raise NVMLError("not supported")

    return SimpleNamespace(
        NVMLError=NVMLError, nvmlInit=lambda: None, nvmlShutdown=lambda: None, nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: i, nvmlDeviceGetGraphicsRunningProcesses=graphics,
        nvmlDeviceGetComputeRunningProcesses=lambda h: [SimpleNamespace(pid=p, usedGpuMemory=m) for p, m in processes])


def test_gpu_memory_via_nvml_when_present(monkeypatch):
    me = os.getpid()
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml([(me, 3 * MEGA), (os.getppid(), 5 * MEGA)]))
    assert sample_process(me, gpu=True).gpu_memory_bytes == 3 * MEGA
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml([(os.getppid(), 5 * MEGA)]))
    assert sample_process(me, gpu=True).gpu_memory_bytes == 0  # listed processes are visible: this one holds none
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml([(no_such_pid(), 5 * MEGA)]))
    assert sample_process(me, gpu=True).gpu_memory_bytes is None  # another PID namespace: unknown, not 0
    monkeypatch.setitem(sys.modules, "pynvml", None)  # not installed
    assert sample_process(me, gpu=True).gpu_memory_bytes is None


def test_leak_watch_in_process():
    kept = []
    with LeakWatch(interval_s=0.05) as leak:
        for _ in range(40):  # 2 MB every 0.05 s for 2 s: 40 MB/s
            m = mmap.mmap(-1, 2 * MEGA)
            for i in range(0, 2 * MEGA, mmap.PAGESIZE):
                m[i] = 1
            kept.append(m)
            leak._sampler.stop.wait(0.05)
        running = leak.result()
    assert running.ended == "running"
    result = leak.result()
    assert result.ended == "stopped" and len(result.samples) >= 20
    assert result.status is LeakStatus.LEAKING
    assert result.trend.slope_bytes_per_s == pytest.approx(40 * MEGA, rel=0.25)
    for m in kept:
        m.close()


def test_bad_watch_arguments():
    with pytest.raises(ConfigError, match="not both"):
        watch(pid=os.getpid(), command=["true"], interval_s=1, duration_s=1)
    with pytest.raises(ConfigError, match="not both and not neither"):
        watch(interval_s=1, duration_s=1)
    with pytest.raises(ConfigError, match="interval 0"):
        watch(pid=os.getpid(), interval_s=0, duration_s=1)
    with pytest.raises(MeasureError, match=f"no process with pid {no_such_pid()}"):
        watch(pid=no_such_pid(), interval_s=1, duration_s=1)
    with pytest.raises(MeasureError, match="cannot start 'no-such-program-xyz'"):
        watch(command=["no-such-program-xyz"], interval_s=1, duration_s=1)


# ---- Theil–Sen and the sawtooth minima on synthetic series ---------------------------------------------------


def test_theil_sen_recovers_a_line_through_noise_and_outliers():
    rng = np.random.default_rng(1)
    t = np.arange(200.0)
    y = 5e6 + 1000.0 * t + rng.normal(0, 20_000, t.size)
    y[::17] += 5e6  # 6% wild outliers
    trend = theil_sen(t, y)
    assert trend.slope_bytes_per_s == pytest.approx(1000.0, rel=0.05)
    assert trend.intercept_bytes == pytest.approx(5e6, rel=0.01)
    assert trend.band_low_bytes_per_s < 1000.0 < trend.band_high_bytes_per_s
    assert trend.confidence > 0.999 and not trend.zero_in_band
    ordinary = np.polyfit(t, y, 1)[0]
    assert abs(ordinary - 1000.0) > abs(trend.slope_bytes_per_s - 1000.0)


def test_theil_sen_band_and_confidence_are_calibrated():
    covered, false_growth = 0, 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        t = np.arange(50.0)
        trend = theil_sen(t, 2.0 * t + rng.normal(0, 30, t.size))
        covered += trend.band_low_bytes_per_s <= 2.0 <= trend.band_high_bytes_per_s
        false_growth += theil_sen(t, rng.normal(0, 30, t.size)).confidence > 0.9
    assert 0.7 < covered / 200 < 0.9  # an 80% band
    assert false_growth / 200 < 0.16  # pure noise is "90% sure of growth" about 10% of the time


def test_theil_sen_subsamples_pairs_when_many():
    rng = np.random.default_rng(3)
    t = np.arange(3000.0)
    trend = theil_sen(t, 2.0 * t + rng.normal(0, 50, t.size), max_pairs=50_000)
    assert trend.pairs <= 50_000 and trend.slope_bytes_per_s == pytest.approx(2.0, rel=0.02)


def sawtooth(t, *, growth_per_s, amplitude=50e6, period_s=60.0, noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    return 300e6 + growth_per_s * t + amplitude * ((t % period_s) / period_s) + rng.normal(0, noise, t.size)


@pytest.mark.parametrize("growth_mb_per_hour", [0.0, 5.0, 50.0, 500.0])
def test_trend_over_sawtooth_minima(growth_mb_per_hour):
    t = np.arange(0.0, 2 * HOUR_S, 10.0)  # 2 h every 10 s under a one-minute, 50 MB sawtooth
    growth = growth_mb_per_hour * MEGA / HOUR_S
    y = sawtooth(t, growth_per_s=growth, noise=200e3)
    trend = fit_trend(t, y)
    assert trend.points < trend.samples == t.size and trend.duration_s == t[-1]
    assert trend.slope_bytes_per_hour == pytest.approx(growth_mb_per_hour * MEGA, abs=2 * MEGA, rel=0.05)
    expected = "stable" if growth_mb_per_hour < 10 else f"leaking at {growth_mb_per_hour:,.3g} MB/hour"
    assert verdict(trend, 10 * MEGA).startswith(expected[:12])


def test_sawtooth_minima_are_the_floor_of_each_tooth():
    t = np.arange(40.0)
    y = sawtooth(t, growth_per_s=0.0, amplitude=10e6, period_s=8.0)
    mt, mv, drops = sawtooth_minima(t, y)
    assert drops == 4 and mt == [8.0, 16.0, 24.0, 32.0] and set(mv) == {300e6}
    assert fit_trend(t, y).slope_bytes_per_s == 0.0
    assert sawtooth_minima(t, 1000.0 * t) == (t.tolist(), (1000.0 * t).tolist(), 0)  # no drops: every sample


def test_verdict_texts_and_inconclusive():
    assert fit_trend([0.0, 1.0], [1.0, 2.0]) is None
    assert verdict(None).startswith("inconclusive")
    wide = Trend(slope_bytes_per_s=1e4, intercept_bytes=0.0, band_low_bytes_per_s=-1e4, band_high_bytes_per_s=3e4,
                 band_level=0.8, confidence=0.7, points=4, samples=4, duration_s=3.0, pairs=6)
    assert verdict(wide, 10 * MEGA).startswith("inconclusive: 36 MB/hour")
    assert verdict(wide, 100 * MEGA) == "stable"
    with pytest.raises(ConfigError, match="outside its band"):
        Trend(slope_bytes_per_s=1.0, intercept_bytes=0.0, band_low_bytes_per_s=2.0, band_high_bytes_per_s=3.0,
              band_level=0.8, confidence=0.5, points=3, samples=3, duration_s=1.0, pairs=3)


def test_plot_trend_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    from sizeup.measure.leak import Sample

    t = np.arange(0.0, 600.0, 5.0)
    y = sawtooth(t, growth_per_s=1e4, period_s=60.0)
    samples = tuple(Sample(unix_time_s=1e9 + x, monotonic_s=x, pid=1, rss_bytes=int(v)) for x, v in zip(t, y))
    result = WatchResult(target="pid 1", pid=1, command=None, interval_s=5.0, samples=samples, ended="duration",
                         trend=fit_trend(t, y))
    out = plot_trend(result, tmp_path / "trend.png")
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert json.loads(json.dumps(result.to_dict()))["status"] == "leaking"


# ---- the CLI, through a small parser of its own (main() registers "watch" separately) ------------------------


def cli(argv):
    from sizeup.cli.commands.watch import register

    parser = argparse.ArgumentParser(prog="sizeup")
    register(parser.add_subparsers(dest="command_name", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_json_on_a_pid(child, tmp_path, capsys):
    proc = child(50)
    db = tmp_path / "runs.sqlite"
    plot = tmp_path / "watch.png"
    argv = ["watch", "--pid", str(proc.pid), "--interval", "200ms", "--duration", "2s", "--db", str(db), "--json"]
    if _has_matplotlib():
        argv += ["--plot", str(plot)]
    assert cli(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["pid"] == proc.pid and data["sample_count"] == len(data["samples"]) >= 9
    assert data["status"] in ("leaking", "inconclusive", "stable") and data["verdict"]
    assert data["trend"]["slope_bytes_per_hour"] > 0 and data["db"] == str(db)
    with Store(db, create=False) as store:
        assert store.run(data["run_id"]).point_count == data["sample_count"]
    if _has_matplotlib():
        assert data["plot"] == str(plot) and plot.stat().st_size > 0


def test_cli_text_on_a_command(tmp_path, capsys):
    script = "import time; time.sleep(30)"
    assert cli(["watch", "--interval", "0.1s", "--duration", "1s", "--threshold-mb-per-hour", "1e6",
                "--db", str(tmp_path / "runs.sqlite"), "--", sys.executable, "-c", script]) == 0
    out = capsys.readouterr().out
    assert "verdict: stable" in out and "samples every" in out and "slope: " in out and "MB/hour" in out
    assert "run 1 saved in" in out


def test_cli_unknown_pid_and_bad_input(capsys, tmp_path):
    db = tmp_path / "runs.sqlite"
    with pytest.raises(MeasureError) as info:
        cli(["watch", "--pid", str(no_such_pid()), "--db", str(db)])
    assert str(info.value) == f"no process with pid {no_such_pid()}"
    assert not db.exists()  # nothing recorded for a watch that never started
    with pytest.raises(ConfigError, match="give --pid PID or -- COMMAND"):
        cli(["watch", "--db", str(db)])
    from sizeup.cli.main import main

    assert main(["watch", "--pid", str(os.getpid()), "--duration", "soon", "--db", str(db)]) == 1
    assert "--duration soon: expected a positive number" in capsys.readouterr().err


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True



def test_main_reports_an_unknown_pid_in_one_line_with_exit_code_1(tmp_path, capsys):
    from sizeup.cli.main import main

    assert main(["watch", "--pid", str(no_such_pid()), "--db", str(tmp_path / "runs.sqlite")]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"sizeup: error: no process with pid {no_such_pid()}"
