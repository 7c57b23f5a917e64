"""Provenance that can be read back from what a run kept: its kind, config, environment and writer.

Used twice: by `measure.provenance` when a run starts (with what only the running machine knows added: the
device type from the catalog, the workload hash, this sizeup's version) and by the migration to
schema version 4, which fills the provenance of runs stored before from the same columns.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["from_environment", "number_in", "workload_class_of"]

_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def number_in(text: object) -> float | None:
    """1980.0 from "1980 MHz", 350.0 from "350.00 W" (nvidia-smi's csv), or a number as it is; None otherwise."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text) if math.isfinite(text) else None
    if not isinstance(text, str):
        return None
    match = _NUMBER.search(text)
    return float(match.group()) if match else None


def workload_class_of(kind: str, config: dict) -> str | None:
    """The workload class a run's kind and config decide on their own: "train-step" for a training sweep, "llm"
    for a preset LLM's prefill and decode, "serving" for a load test; None for the inference of a traced model,
    whose class ("cnn" or "traced") depends on its ledger (measure.profiles.ledger_class)."""
    if kind == "train":
        return "train-step"
    if kind == "load":
        return "serving"
    if kind == "inference" and config.get("llm"):
        return "llm"
    return None


def from_environment(kind: str, config: dict, environment: dict, writer: dict) -> dict[str, Any]:
    """The provenance columns readable from a run's stored kind, config, environment (measure.env) and writer."""
    values: dict[str, Any] = {}
    if isinstance(writer.get("host"), str):
        values["host"] = writer["host"]
    if config.get("onnx"):
        values["engine"] = "onnxruntime"
        version = environment.get("onnxruntime")
    elif kind in ("inference", "train", "microbench", "collectives") and environment.get("torch"):
        values["engine"] = "torch"
        version = environment.get("torch")
    else:
        version = None
    if isinstance(version, str):
        values["engine_version"] = version
    for column, key in (("driver", "driver"), ("gpu_product", "gpu_name")):
        if isinstance(environment.get(key), str):
            values[column] = environment[key]
    for column, key in (("gpu_clock_mhz", "sm_clock"), ("gpu_clock_max_mhz", "sm_clock_max"),
                        ("power_limit_w", "power_limit")):
        number = number_in(environment.get(key))
        if number is not None:
            values[column] = number
    cls = workload_class_of(kind, config)
    if cls is not None:
        values["workload_class"] = cls
    return values
