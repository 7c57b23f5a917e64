"""The documented entry points: one function per verb, each returning a typed, frozen result with `to_dict()`
(the object the command's `--json` prints); bad input raises a `SizeupError` whose message is the one line the
CLI prints. The CLI, the web UI and the MCP server are faces over these functions.

    estimate     serving one model on one device              sizeup estimate MODEL --device NAME
    compare      one model on many devices                    sizeup estimate MODEL --devices CLASS|A,B,C
    fit          which models run on one device               sizeup fit DEVICE
    models       the presets                                  sizeup models [QUERY]
    train        training or fine-tuning                      sizeup train MODEL --device NAME
    plan         the cheapest setup for a scenario            sizeup plan SCENARIO.yaml
    measure      run a model on this machine                  sizeup measure TARGET
    calibrate    fit this machine's efficiencies              sizeup calibrate
    compare_run  a stored run beside its prediction           sizeup compare RUN_ID
    runs / run   the run store                                sizeup runs list|show
    hw           the hardware catalog                         sizeup hw list|show|offers|local

Each verb takes its model or target positionally and its options as keywords (the fields of the verb's
options dataclass, e.g. `EstimateOptions`), or an options object positionally:
`estimate("llama-3.1-8b", device="rtx-4090", quant="q4_k_m", engine="llama.cpp")`.

Importing this package loads nothing: each name loads its module on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_WHERE: dict[str, str] = {
    # name: the module under sizeup.api that defines it
    "estimate": "inference", "EstimateOptions": "inference", "EstimateResult": "inference",
    "Alternative": "inference", "check_context": "inference", "check_scenario_context": "inference",
    "OnnxEstimate": "onnx_estimate",
    "compare": "devices", "compare_devices": "devices", "CompareOptions": "devices", "DeviceComparison": "devices",
    "fit": "fitting", "FitOptions": "fitting", "FitResult": "fitting", "FitRow": "fitting",
    "models": "presets", "ModelList": "presets", "ModelInfo": "presets",
    "train": "training", "train_methods": "training", "TrainOptions": "training", "MethodComparison": "training",
    "plan": "planning", "PlanOptions": "planning", "PlanReport": "planning",
    "measure": "measuring", "MeasureOptions": "measuring", "MeasureResult": "measuring",
    "calibrate": "calibrating", "CalibrateOptions": "calibrating", "CalibrationResult": "calibrating",
    "compare_run": "run_compare", "RunComparison": "run_compare",
    "runs": "run_store", "run": "run_store", "export_runs": "run_store", "RunList": "run_store",
    "hw": "hardware", "hw_list": "hardware", "offers": "hardware", "local": "hardware", "DeviceInfo": "hardware",
    "DeviceList": "hardware", "OfferList": "hardware",
    "count_flops": "flops", "count_onnx": "flops", "FlopsReport": "flops", "ParsedInput": "flops",
    "parse_input_specs": "flops", "parse_shape": "flops",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'sizeup.api' has no attribute {name!r}")
    value = getattr(import_module(f"sizeup.api.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


if TYPE_CHECKING:  # what a type checker and the import graph see; nothing is imported at run time
    from sizeup.api.calibrating import CalibrateOptions, CalibrationResult, calibrate
    from sizeup.api.devices import CompareOptions, DeviceComparison, compare, compare_devices
    from sizeup.api.fitting import FitOptions, FitResult, FitRow, fit
    from sizeup.api.flops import FlopsReport, ParsedInput, count_flops, count_onnx, parse_input_specs, parse_shape
    from sizeup.api.hardware import DeviceInfo, DeviceList, OfferList, hw, hw_list, local, offers
    from sizeup.api.inference import (Alternative, EstimateOptions, EstimateResult, check_context,
                                      check_scenario_context, estimate)
    from sizeup.api.measuring import MeasureOptions, MeasureResult, measure
    from sizeup.api.onnx_estimate import OnnxEstimate
    from sizeup.api.planning import PlanOptions, PlanReport, plan
    from sizeup.api.presets import ModelInfo, ModelList, models
    from sizeup.api.run_compare import RunComparison, compare_run
    from sizeup.api.run_store import RunList, export_runs, run, runs
    from sizeup.api.training import MethodComparison, TrainOptions, train, train_methods
