"""The per-op host cost measured directly: the model's forward on an empty batch (batch 0).

Every module is called and every op is dispatched (argument checks, output allocation, the Python and ATen
layers), but no element is computed and no weight is read: what is left is the framework's fixed cost per op,
the term the roofline adds per kernel on a CPU. It is measured, not fitted: the intercept of latency against
batch size cannot tell that cost from the weights streamed on every forward (a fixed cost too), so `compare`
checks the fitted per-op overhead against this floor. It is a lower bound of the cost per op at batch 1 (a
oneDNN convolution skips its primitive look-up on an empty input: ~1 us of ~5 us per op on this CPU).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["measure_floor", "floor_seconds", "floor_pinned"]

FLOOR_SPREAD = 0.20
"""A floor whose median repetition is more than this fraction above its fastest was timed on a busy machine."""


def _policy():
    from sizeup.measure.harness import TimingPolicy

    # cheap (~1 ms a forward for ResNet-50): many repetitions, so that the least is the quiet machine's even at a
    # load of 4 per core (with 20 of them, the floor of the same model moved by up to 25% between runs)
    return TimingPolicy(warmup=5, min_repetitions=150, max_repetitions=150, point_budget_s=1.5, tolerance=0.0)


def measure_floor(model, specs: Sequence[Any], device, dtype) -> dict[str, Any]:
    """The forward at batch 0, timed: {"min_s", "median_s", "cpu_min_s" (None without CPU times), "repetitions"},
    or {"error": ...} when the model does not run on an empty batch (a reshape to -1, a reduction over it)."""
    from sizeup.measure.harness import measure_inference

    try:
        result = measure_inference(model, specs, 0, device, dtype, _policy())
    except Exception as error:  # an empty batch is not every model's input: the run goes on without a floor
        return {"error": f"{type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"}
    if result.status != "ok" or not result.samples_s:
        return {"error": result.error or result.status}
    samples, cpu = sorted(result.samples_s), sorted(result.cpu_samples_s)
    return {"min_s": samples[0], "median_s": samples[len(samples) // 2],
            "cpu_min_s": cpu[0] if cpu else None, "cpu_median_s": cpu[len(cpu) // 2] if cpu else None,
            "repetitions": len(samples)}


def floor_seconds(floor: dict[str, Any] | None, statistic: str) -> float | None:
    """The floor in the statistic the calibration compares (cpu-min where recorded, else the wall minimum)."""
    if not floor or floor.get("error"):
        return None
    value = floor.get("cpu_min_s") if statistic == "cpu-min" else None
    value = value or floor.get("min_s")
    return float(value) if value and math.isfinite(value) and value > 0 else None


def floor_pinned(floor: dict[str, Any] | None) -> bool:
    """Whether the floor's repetitions agree: >= 10 of them, the median within FLOOR_SPREAD of the fastest — in CPU
    time where recorded (other processes on the cores stretch the wall time, not the thread's CPU time), else in
    wall time."""
    if not floor or floor.get("error") or not floor.get("min_s"):
        return False
    low, mid = ((floor["cpu_min_s"], floor["cpu_median_s"]) if floor.get("cpu_min_s") and floor.get("cpu_median_s")
                else (floor["min_s"], floor["median_s"]))
    return floor.get("repetitions", 0) >= 10 and mid <= (1 + FLOOR_SPREAD) * low
