"""`watch --util` readers on recorded-format samples (tests/measure/fixtures/README.md says where each format is
documented): nvidia-smi CSV, tegrastats lines, and NVML through a stand-in for pynvml (no GPU here)."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from sizeup.errors import MeasureError
from sizeup.measure.util_gpu import (GpuSample, parse_nvidia_smi_csv, parse_tegrastats, read_nvml, reasons)
from sizeup.measure.util_host import StepReader

FIXTURES = Path(__file__).parent / "fixtures"


def test_nvidia_smi_with_units():
    ticks = parse_nvidia_smi_csv((FIXTURES / "nvidia_smi_h100_busy.csv").read_text())
    assert len(ticks) == 6 and all(len(t) == 1 for t in ticks)
    first = ticks[0][0]
    assert first == GpuSample(index=0, util_pct=97, memory_util_pct=38, sm_clock_mhz=1980, max_sm_clock_mhz=1980,
                              power_w=612.40, power_limit_w=700.0, temperature_c=58, throttle_mask=0,
                              memory_used_bytes=70211 << 20, memory_total_bytes=81559 << 20)
    assert reasons(ticks[2][0].throttle_mask) == ("sw_power_cap",)


def test_nvidia_smi_two_gpus_without_units_and_missing_power():
    ticks = parse_nvidia_smi_csv((FIXTURES / "nvidia_smi_2gpu_nounits.csv").read_text())
    assert len(ticks) == 4 and [s.index for s in ticks[0]] == [0, 1]
    idle = ticks[0][1]
    assert idle.power_w is None and reasons(idle.throttle_mask) == ("gpu_idle",) and idle.clock_ratio == 210 / 2520


def test_nvidia_smi_thermal_reasons():
    ticks = parse_nvidia_smi_csv((FIXTURES / "nvidia_smi_a100_thermal.csv").read_text())
    assert reasons(ticks[3][0].throttle_mask) == ("sw_thermal", "hw_thermal")
    assert ticks[-1][0].clock_ratio == pytest.approx(1110 / 1410)


@pytest.mark.parametrize("text, match", [("", "empty"), ("name, utilization.gpu [%]\nx, 3\n", "index first"),
                                         ("index, fan.speed [%]\n0, 30\n", "unknown field 'fan.speed'"),
                                         ("index, utilization.gpu [%]\n0, lots\n", "expected a number")])
def test_nvidia_smi_bad_output_is_one_line(text, match):
    with pytest.raises(MeasureError, match=match):
        parse_nvidia_smi_csv(text)


def test_tegrastats_orin():
    line = (FIXTURES / "tegrastats_orin_hot.log").read_text().splitlines()[2]
    t = parse_tegrastats(line, max_gpu_clock_mhz=1300)
    assert t.gpu.util_pct == 99 and t.gpu.sm_clock_mhz == 624 and t.gpu.clock_ratio == pytest.approx(624 / 1300)
    assert t.gpu.memory_util_pct == 29 and t.gpu.power_w == pytest.approx(13.880)
    assert t.gpu.temperature_c == pytest.approx(99.781)  # tj, the hottest zone
    assert len(t.cpu_pct) == 12 and t.cpu_pct[0] == 41
    assert t.ram_used_bytes == 9841 << 20 and t.ram_total_bytes == 62841 << 20
    assert t.rails_mw == {"VDD_GPU_SOC": 13880, "VDD_CPU_CV": 4050, "VIN_SYS_5V0": 6650}


def test_tegrastats_nano_jetpack4():
    first, second = (FIXTURES / "tegrastats_nano.log").read_text().splitlines()
    t = parse_tegrastats(first)
    assert t.gpu.util_pct == 76 and t.gpu.sm_clock_mhz == 921 and t.gpu.max_sm_clock_mhz is None
    assert t.cpu_pct == (12, 8, None, None)  # two cores powered down
    assert "PMIC" not in t.temperatures_c and t.gpu.temperature_c == 49.5  # the fixed PMIC@100C is no reading
    assert t.rails_mw["POM_5V_GPU"] == 880 and t.gpu.power_w == pytest.approx(0.880)
    assert parse_tegrastats(second).cpu_pct[0] == 100


def test_not_a_tegrastats_line():
    with pytest.raises(MeasureError, match="not a tegrastats line"):
        parse_tegrastats("hello world")


class _FakeNvml:
    """Stands in for pynvml on a machine with no GPU: the getters NVML documents, with one that is unsupported."""
    NVML_CLOCK_SM = 1
    NVML_TEMPERATURE_GPU = 0

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, i):
        return f"h{i}"

    def nvmlDeviceGetUtilizationRates(self, h):
        return SimpleNamespace(gpu=93, memory=71)

    def nvmlDeviceGetMemoryInfo(self, h):
        return SimpleNamespace(used=20 << 30, total=24 << 30)

    def nvmlDeviceGetPowerUsage(self, h):
        return 301_250  # mW

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return 450_000

    def nvmlDeviceGetClockInfo(self, h, kind):
        return 2310

    def nvmlDeviceGetMaxClockInfo(self, h, kind):
        return 2520

    def nvmlDeviceGetTemperature(self, h, sensor):
        raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return 0x4


def test_nvml_readings_in_si_units():
    (s,) = read_nvml(_FakeNvml())
    assert s.util_pct == 93 and s.memory_util_pct == 71 and s.power_w == pytest.approx(301.25)
    assert s.power_limit_w == 450 and s.temperature_c is None and reasons(s.throttle_mask) == ("sw_power_cap",)
    assert s.memory_used_bytes == 20 << 30 and s.clock_ratio == pytest.approx(2310 / 2520)


def test_step_file_reads_what_was_appended(tmp_path):
    path = tmp_path / "steps.txt"
    reader = StepReader(path)
    assert reader.read() == []  # not there yet
    path.write_text("0.25\n0.5\nnot a number\n-1\n0.2")  # the last line is still being written
    assert reader.read() == [0.25, 0.5] and reader.bad_lines == 2
    with open(path, "a") as f:
        f.write("5\n0.3\n")
    assert reader.read() == [0.25, 0.3] and reader.steps == [0.25, 0.5, 0.25, 0.3]
