"""The environment a measurement ran in: device, driver, library versions, threads, CPU governor,
GPU clocks, power limit and persistence mode where readable, and warnings when the machine is not quiet."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["capture_environment", "environment_warnings"]


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def capture_environment(device: str) -> dict[str, Any]:
    """A JSON-able description of the machine and software; never raises."""
    import torch

    env: dict[str, Any] = {
        "python": sys.version.split()[0], "platform": platform.platform(), "machine": platform.machine(),
        "torch": torch.__version__, "threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
        "device": device, "load_average_1m": _load_average(),
        "cpu_governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
    }
    try:
        from sizeup.hardware.local import _cpuinfo

        env["cpu_model"], env["cpu_flags"], env["physical_cores"] = _cpuinfo()
    except Exception as e:  # a description must not stop a measurement
        env["cpu_model_error"] = str(e)
    for module in ("numpy", "onnxruntime", "transformers"):
        mod = sys.modules.get(module)
        if mod is not None:
            env[module] = getattr(mod, "__version__", "?")
    if device.startswith("cuda") and torch.cuda.is_available():
        index = torch.device(device).index or 0
        props = torch.cuda.get_device_properties(index)
        env.update({"gpu_name": props.name, "gpu_memory_bytes": props.total_memory, "cuda": torch.version.cuda,
                    "cudnn": torch.backends.cudnn.version()})
        try:
            out = subprocess.run(["nvidia-smi", f"--id={index}", "--query-gpu=driver_version,clocks.sm,clocks.max.sm,"
                                  "persistence_mode,clocks_throttle_reasons.active,power.limit", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=10, check=True).stdout.strip()
            driver, sm, sm_max, persistence, throttle, power = [v.strip() for v in out.split(",")]
            env.update({"driver": driver, "sm_clock": sm, "sm_clock_max": sm_max, "persistence_mode": persistence,
                        "throttle_reasons": throttle, "power_limit": power})
        except (OSError, subprocess.SubprocessError, ValueError):
            env["nvidia_smi"] = "unavailable"
    if device == "mps":
        env["mps_available"] = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
    return env


def environment_warnings(env: dict[str, Any]) -> list[str]:
    """What may make the timings noisy."""
    warnings = []
    governor = env.get("cpu_governor")
    if governor and governor != "performance":
        warnings.append(f"CPU frequency governor is {governor!r}, not 'performance': timings may vary")
    load = env.get("load_average_1m")
    if load is not None and env.get("cpu_count") and load > 0.5 * env["cpu_count"]:
        warnings.append(f"the machine is busy (1-minute load {load:.1f} on {env['cpu_count']} CPUs)")
    if env.get("device", "").startswith("cuda"):
        if env.get("persistence_mode") not in (None, "Enabled"):
            warnings.append("GPU persistence mode is off: the first runs pay for driver start-up")
        if env.get("sm_clock") and env.get("sm_clock_max") and env["sm_clock"] != env["sm_clock_max"]:
            warnings.append(f"GPU clocks are not locked ({env['sm_clock']} of {env['sm_clock_max']})")
    return warnings
