"""The verdicts of `watch --util`, each from the samples that should lead to it (recorded-format logs for the GPU
side, synthetic host samples for the CPU side), and the replay command on the recorded logs."""

import json
from pathlib import Path

import pytest

from sizeup.cli.main import main
from sizeup.measure.util_gpu import GpuSample, parse_nvidia_smi_csv
from sizeup.measure.util_host import HostSample
from sizeup.measure.util_verdict import diagnose

FIXTURES = Path(__file__).parent / "fixtures"


def _host(cores=(20.0, 20.0), job=20.0, queued=0.0, iowait=0.0, disk=0.0):
    return HostSample(time_s=0.0, cpu_pct=tuple(cores), iowait_pct=iowait, job_cpu_pct=job, job_threads=4,
                      job_runqueue_pct=queued, disk_read_bytes_per_s=0.0, disk_write_bytes_per_s=0.0,
                      disk_busy_pct=disk, net_recv_bytes_per_s=0.0, net_sent_bytes_per_s=0.0)


def _gpu(util, mem=20.0, clock=1980.0, mask=0, temp=60.0):
    return GpuSample(index=0, util_pct=util, memory_util_pct=mem, sm_clock_mhz=clock, max_sm_clock_mhz=1980.0,
                     temperature_c=temp, throttle_mask=mask)


def _flat(name):
    return [s for tick in parse_nvidia_smi_csv((FIXTURES / name).read_text()) for s in tick]


def test_a_busy_h100_is_gpu_bound():
    d = diagnose(_flat("nvidia_smi_h100_busy.csv"), [_host()] * 6)
    assert d.verdict == "gpu-bound" and d.numbers["gpu_util_pct"] == pytest.approx(98.0)


def test_a_hot_a100_is_thermally_throttled_with_the_clock_lost():
    d = diagnose(_flat("nvidia_smi_a100_thermal.csv"), [_host()] * 6)
    assert d.verdict == "throttled-thermal"
    assert d.numbers["throttle_share"] == pytest.approx(5 / 6)
    assert d.numbers["clock_lost"] == pytest.approx(1 - 1110 / 1410)  # median clock of the throttled samples
    assert "SW/HW thermal slowdown in 5 of 6" in d.evidence[0]


def test_power_capped():
    d = diagnose([_gpu(99, clock=1700, mask=0x4)] * 5, [_host()] * 5)
    assert d.verdict == "throttled-power" and d.numbers["clock_lost"] == pytest.approx(1 - 1700 / 1980)


def test_memory_bound():
    assert diagnose([_gpu(95, mem=88)] * 5, [_host()] * 5).verdict == "memory-bound"


def test_idle_gaps():
    d = diagnose([_gpu(u) for u in (95, 0, 97, 2, 96, 0, 94, 1)], [_host()] * 8)
    assert d.verdict == "idle-gaps" and "idles in 50%" in d.summary


def test_input_bound_on_the_cpu_names_the_wait():
    # GPU 35% busy; the job (main process and 3 loader workers) keeps all 4 cores busy
    d = diagnose([_gpu(35)] * 6, [_host(cores=(98, 97, 99, 96), job=385)] * 6)
    assert d.verdict == "input-bound-cpu" and "waits 65%" in d.summary and "every core" in d.summary


def test_input_bound_on_one_core_even_when_the_machine_is_shared():
    # the job got 40% of a core but waited 55% more in the run queue: it wanted one full core
    d = diagnose([_gpu(30)] * 6, [_host(cores=(100, 100), job=40, queued=55)] * 6)
    assert d.verdict == "input-bound-cpu" and "one core" in d.summary
    assert any("other processes compete" in f for f in d.findings)


def test_input_bound_on_io():
    d = diagnose([_gpu(25)] * 6, [_host(job=30, iowait=35, disk=97)] * 6)
    assert d.verdict == "input-bound-io"


def test_under_used_when_nothing_is_saturated():
    assert diagnose([_gpu(20)] * 6, [_host(job=30)] * 6).verdict == "under-used"


def test_memory_full_is_a_finding():
    full = GpuSample(index=0, util_pct=96, memory_used_bytes=79 << 30, memory_total_bytes=80 << 30)
    d = diagnose([full] * 4, [_host()] * 4)
    assert any("full" in f for f in d.findings)


def test_cpu_only_verdicts():
    assert diagnose([], [_host(cores=(99, 98), job=195)] * 4).verdict == "cpu-bound"
    assert diagnose([], [_host(cores=(99, 10), job=99)] * 4).verdict == "cpu-bound-one-core"
    assert diagnose([], [_host(job=5, iowait=40)] * 4).verdict == "io-bound"
    assert diagnose([], [_host(job=5)] * 4).verdict == "waiting"
    assert diagnose([], []).verdict == "no-samples"


def test_step_spikes_are_a_finding():
    steps = [0.1] * 30
    for i in range(9, 30, 10):
        steps[i] = 0.9
    d = diagnose([], [_host(job=99)] * 3, steps)
    assert any("every 10 steps" in f for f in d.findings) and d.numbers["step_spikes"] == 3


def test_replay_of_a_hot_orin_is_thermal_throttling(capsys):
    code = main(["watch", "--replay", str(FIXTURES / "tegrastats_orin_hot.log"), "--max-gpu-clock", "1300",
                 "--trip", "99", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["diagnosis"]["verdict"] == "throttled-thermal"
    assert out["diagnosis"]["numbers"]["clock_lost"] == pytest.approx(1 - 624 / 1300)  # median of 816, 624, 624
    cool = main(["watch", "--replay", str(FIXTURES / "tegrastats_orin_cool.log"), "--max-gpu-clock", "1300",
                 "--trip", "99", "--json"])
    assert cool == 0 and json.loads(capsys.readouterr().out)["diagnosis"]["verdict"] == "gpu-bound"


def test_replay_of_nvidia_smi_text(capsys):
    assert main(["watch", "--replay", str(FIXTURES / "nvidia_smi_a100_thermal.csv")]) == 0
    out = capsys.readouterr().out
    assert "verdict: throttled (thermal)" in out and "clock 21% below" in out


def test_replay_refuses_a_target(capsys):
    assert main(["watch", "--replay", str(FIXTURES / "tegrastats_nano.log"), "--pid", "1"]) == 1
    assert "--replay diagnoses a recorded log" in capsys.readouterr().err
