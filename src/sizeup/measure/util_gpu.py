"""GPU readings for `sizeup watch --util`: one `GpuSample` per device per tick, from NVML (`pynvml`, package
nvidia-ml-py), from `nvidia-smi --query-gpu … --format=csv` output, or from a Jetson's `tegrastats` line.

NVML (docs.nvidia.com/deploy/nvml-api, read 2026-12-04; names and constants as nvidia-ml-py 13.615.71 defines
them): `nvmlDeviceGetUtilizationRates` gives `gpu`, the percent of the last sample period (1/6 s to 1 s by
product) during which one or more kernels ran, and `memory`, the percent during which device memory was read
or written; `nvmlDeviceGetClockInfo(NVML_CLOCK_SM)` and `nvmlDeviceGetMaxClockInfo` in MHz;
`nvmlDeviceGetPowerUsage` and `nvmlDeviceGetEnforcedPowerLimit` in milliwatts; `nvmlDeviceGetTemperature
(NVML_TEMPERATURE_GPU)` in °C; `nvmlDeviceGetCurrentClocksEventReasons` (formerly …ThrottleReasons) a bit mask,
`THROTTLE_BITS` below.

tegrastats (Jetson Linux Developer Guide, "tegrastats Utility"; DRIVE OS 6.0 "Reported Statistics", read
2026-12-04): `RAM X/Y(MB)`, `CPU [X%@MHz,…]` (`off` for a powered-down core), `EMC_FREQ X%@MHz` (external memory
controller), `GR3D_FREQ X%@MHz` or, on Orin, `X%@[MHz,MHz]` per GPC, temperatures `NAME@T.TC` (-256C: no sensor),
power rails `NAME CUR_mW/AVG_mW`. The sample's temperature is the hottest sensor's (on Orin `tj`, the junction
maximum): the hottest zone is the one that throttles. A Jetson reports no throttle reasons: the GPU clock is compared with the power
mode's maximum instead (`max_sm_clock_mhz` given by the caller), and the temperature with the trip points.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, fields
from typing import Any

from sizeup.errors import MeasureError

__all__ = ["GpuSample", "THROTTLE_BITS", "THERMAL_BITS", "POWER_BITS", "reasons", "read_nvml", "parse_nvidia_smi_csv",
           "NVIDIA_SMI_QUERY", "parse_tegrastats", "TegraSample"]

THROTTLE_BITS = {
    0x1: "gpu_idle", 0x2: "applications_clocks", 0x4: "sw_power_cap", 0x8: "hw_slowdown", 0x10: "sync_boost",
    0x20: "sw_thermal", 0x40: "hw_thermal", 0x80: "hw_power_brake", 0x100: "display_clocks",
}
"""nvmlClocksEventReason* bits (nvidia-ml-py 13.615.71 pynvml.py; nvml.h). HW slowdown is 'engaged due to high
temperature, power brake assertion, or high power draw' (NVML docs), so it counts as neither alone."""
THERMAL_BITS = 0x20 | 0x40
POWER_BITS = 0x4 | 0x80


def reasons(mask: int | None) -> tuple[str, ...]:
    """The names of the bits set in a clocks-event-reasons mask."""
    if mask is None:
        return ()
    return tuple(name for bit, name in THROTTLE_BITS.items() if mask & bit)


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuSample:
    index: int
    """Device index (0 on a Jetson)."""
    util_pct: float | None = None
    """Percent of the sample period a kernel was running."""
    memory_util_pct: float | None = None
    """Percent of the sample period device memory was read or written (the EMC on a Jetson)."""
    sm_clock_mhz: float | None = None
    max_sm_clock_mhz: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    temperature_c: float | None = None
    throttle_mask: int | None = None
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None

    @property
    def clock_ratio(self) -> float | None:
        if self.sm_clock_mhz is None or not self.max_sm_clock_mhz:
            return None
        return self.sm_clock_mhz / self.max_sm_clock_mhz

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)} | {"reasons": list(reasons(self.throttle_mask))}


# ---- NVML (live) --------------------------------------------------------------------------------

def _call(fn, *args):
    """An NVML getter, or None where the device does not support it."""
    try:
        return fn(*args)
    except Exception:  # pynvml.NVMLError_NotSupported and friends: that reading is absent, not an error
        return None


def read_nvml(pynvml) -> list[GpuSample]:
    """One sample of every device NVML sees (nvmlInit done by the caller)."""
    out = []
    for index in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(index)
        util = _call(pynvml.nvmlDeviceGetUtilizationRates, h)
        memory = _call(pynvml.nvmlDeviceGetMemoryInfo, h)
        power = _call(pynvml.nvmlDeviceGetPowerUsage, h)
        limit = _call(pynvml.nvmlDeviceGetEnforcedPowerLimit, h)
        getter = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
        out.append(GpuSample(
            index=index, util_pct=None if util is None else float(util.gpu),
            memory_util_pct=None if util is None else float(util.memory),
            sm_clock_mhz=_call(pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_SM),
            max_sm_clock_mhz=_call(pynvml.nvmlDeviceGetMaxClockInfo, h, pynvml.NVML_CLOCK_SM),
            power_w=None if power is None else power / 1000, power_limit_w=None if limit is None else limit / 1000,
            temperature_c=_call(pynvml.nvmlDeviceGetTemperature, h, pynvml.NVML_TEMPERATURE_GPU),
            throttle_mask=_call(getter, h),
            memory_used_bytes=None if memory is None else int(memory.used),
            memory_total_bytes=None if memory is None else int(memory.total)))
    return out


# ---- nvidia-smi CSV (recorded, or live without pynvml) --------------------------------------------

NVIDIA_SMI_QUERY = ("index,utilization.gpu,utilization.memory,clocks.sm,clocks.max.sm,power.draw,power.limit,"
                    "temperature.gpu,clocks_event_reasons.active,memory.used,memory.total")
"""`nvidia-smi --query-gpu=NVIDIA_SMI_QUERY --format=csv` (`nvidia-smi --help-query-gpu` names each field; older
drivers call the mask clocks_throttle_reasons.active, which is read too)."""

_SMI_FIELDS = {"index": "index", "utilization.gpu": "util_pct", "utilization.memory": "memory_util_pct",
               "clocks.sm": "sm_clock_mhz", "clocks.current.sm": "sm_clock_mhz", "clocks.max.sm": "max_sm_clock_mhz",
               "clocks.max.sm_clock": "max_sm_clock_mhz", "power.draw": "power_w", "power.limit": "power_limit_w",
               "enforced.power.limit": "power_limit_w", "temperature.gpu": "temperature_c",
               "clocks_event_reasons.active": "throttle_mask", "clocks_throttle_reasons.active": "throttle_mask",
               "memory.used": "memory_used_bytes", "memory.total": "memory_total_bytes"}
_MIB = 1 << 20


def _smi_value(text: str):
    text = text.strip()
    if not text or text.startswith("[") or text.upper() in ("N/A", "NOT SUPPORTED"):
        return None
    if text.lower().startswith("0x"):
        return int(text, 16)
    number = text.split()[0]  # "97 %", "1980 MHz", "387.21 W", "60000 MiB" without nounits
    try:
        return float(number)
    except ValueError:
        raise MeasureError(f"nvidia-smi value {text[:40]!r}: expected a number") from None


def parse_nvidia_smi_csv(text: str) -> list[list[GpuSample]]:
    """Rows of `nvidia-smi --query-gpu=… --format=csv[,nounits]` (header included; the query may repeat with
    `-l`, its header printed once): one list of devices per tick, a tick ending when an index repeats."""
    rows = list(csv.reader(io.StringIO(text), skipinitialspace=True))
    if not rows:
        raise MeasureError("nvidia-smi output is empty")
    header = [re.sub(r"\s*\[.*?\]\s*$", "", h.strip()) for h in rows[0]]
    unknown = [h for h in header if h not in _SMI_FIELDS and h != "timestamp"]
    if "index" not in header or unknown:
        raise MeasureError("nvidia-smi output: expected a CSV header from --query-gpu with index first" +
                           (f" (unknown field {unknown[0]!r})" if unknown else ""))
    ticks: list[list[GpuSample]] = []
    current: list[GpuSample] = []
    for row in rows[1:]:
        if not row or row == rows[0]:
            continue
        values: dict[str, Any] = {}
        for name, cell in zip(header, row):
            if name == "timestamp":
                continue
            value = _smi_value(cell)
            key = _SMI_FIELDS[name]
            if key in ("memory_used_bytes", "memory_total_bytes") and value is not None:
                value = int(value * _MIB)
            elif key in ("index", "throttle_mask") and value is not None:
                value = int(value)
            values[key] = value
        sample = GpuSample(**values)
        if any(s.index == sample.index for s in current):
            ticks.append(current)
            current = []
        current.append(sample)
    if current:
        ticks.append(current)
    return ticks


# ---- tegrastats (Jetson) -----------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class TegraSample:
    gpu: GpuSample
    cpu_pct: tuple[float | None, ...]
    """Per core; None for a core that is off."""
    ram_used_bytes: int | None
    ram_total_bytes: int | None
    temperatures_c: dict[str, float]
    rails_mw: dict[str, float]
    """Instantaneous power per rail."""


_RAM = re.compile(r"\bRAM (\d+)/(\d+)MB")
_CPU = re.compile(r"\bCPU \[([^\]]*)\]")
_EMC = re.compile(r"\bEMC_FREQ (\d+)%(?:@(\d+))?")
_GR3D = re.compile(r"\bGR3D_FREQ (\d+)%(?:@\[?([\d,]+)\]?)?")
_TEMP = re.compile(r"\b([A-Za-z][\w]*)@(-?\d+(?:\.\d+)?)C\b")
_RAIL = re.compile(r"\b([A-Z][A-Z0-9_]*) (\d+)(?:mW)?/(\d+)(?:mW)?(?![\dA-Za-z])")
"""A power rail, `NAME CUR/AVG` in mW (JetPack 4 prints the numbers bare, later releases with 'mW')."""
_NOT_RAILS = ("RAM", "SWAP", "IRAM")
_DUMMY_SENSORS = ("PMIC",)
"""Jetson Nano/TX reports a fixed PMIC@100C that is no temperature reading."""
_GPU_RAILS = ("VDD_GPU_SOC", "VDD_CPU_GPU_CV", "VDD_GPU", "POM_5V_GPU", "GPU")


def parse_tegrastats(line: str, max_gpu_clock_mhz: float | None = None) -> TegraSample:
    """One tegrastats line; MeasureError for a line that is not one. `max_gpu_clock_mhz`: the power mode's GPU
    maximum (the clock ratio and the throttle verdict need it)."""
    gr3d = _GR3D.search(line)
    ram = _RAM.search(line)
    if gr3d is None and ram is None:
        raise MeasureError(f"not a tegrastats line: {line[:60]!r}")
    cpu: list[float | None] = []
    m = _CPU.search(line)
    if m:
        for core in m.group(1).split(","):
            core = core.strip()
            cpu.append(None if core in ("off", "") else float(core.split("%")[0]))
    temps = {name: float(t) for name, t in _TEMP.findall(line)
             if float(t) > -200 and name not in _DUMMY_SENSORS}  # -256C: no sensor
    rails = {name: float(cur) for name, cur, _avg in _RAIL.findall(line) if name not in _NOT_RAILS}
    clock = None
    if gr3d and gr3d.group(2):
        clocks = [float(c) for c in gr3d.group(2).split(",") if c]
        clock = sum(clocks) / len(clocks)
    emc = _EMC.search(line)
    rail = next((rails[r] for r in _GPU_RAILS if r in rails), None)
    gpu = GpuSample(index=0, util_pct=float(gr3d.group(1)) if gr3d else None,
                    memory_util_pct=float(emc.group(1)) if emc else None, sm_clock_mhz=clock,
                    max_sm_clock_mhz=max_gpu_clock_mhz, power_w=None if rail is None else rail / 1000,
                    temperature_c=max(temps.values()) if temps else None,
                    memory_used_bytes=int(ram.group(1)) * _MIB if ram else None,
                    memory_total_bytes=int(ram.group(2)) * _MIB if ram else None)
    return TegraSample(gpu=gpu, cpu_pct=tuple(cpu), ram_used_bytes=gpu.memory_used_bytes,
                       ram_total_bytes=gpu.memory_total_bytes, temperatures_c=temps, rails_mw=rails)
