"""The MCP tools: estimate, fit, compare, train and plan, each with the JSON Schema of its verb's options.

What a tool may do is narrower than the CLI: no option that names a file of the server's machine other than a
model or scenario to read (no `--catalog`, `--db`), and no model that is Python code to import
(FILE.py:FACTORY, package.module:FACTORY): a tool call never runs code the agent names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from sizeup.errors import ConfigError

__all__ = ["TOOLS", "Tool", "call_tool"]

_LEFT_OUT = ("catalog", "db", "inputs", "input_specs", "dtype")
"""Options no tool takes: extra catalog folders and run stores (files of the server's machine), and the inputs
of a traced torch module (which would import code)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    name: str
    description: str
    schema: Callable[[], dict[str, Any]]
    """The input schema (built on first use: it imports the verb's module)."""
    positional: str
    """The argument passed positionally to the verb (the model, device or scenario)."""
    verb: Callable[[], Callable[..., Any]]


def _model(what: str) -> dict[str, Any]:
    return {"type": "string", "description": what}


def _schema(module: str, options: str, positional: str, description: str,
            required: tuple[str, ...] = ()) -> Callable[[], dict[str, Any]]:
    def build() -> dict[str, Any]:
        from importlib import import_module

        from sizeup.api.schema import options_schema

        cls = getattr(import_module(f"sizeup.api.{module}"), options)
        return options_schema(cls, leave_out=_LEFT_OUT, required=(positional, *required),
                              first={positional: _model(description)})
    return build


def _verb(name: str) -> Callable[[], Callable[..., Any]]:
    def load() -> Callable[..., Any]:
        import sizeup.api

        return getattr(sizeup.api, name)
    return load


_MODEL = ("a preset (sizeup models), a Hugging Face id of a preset, or a config.json / model folder / .safetensors / "
          ".gguf path on the server's machine")

TOOLS: dict[str, Tool] = {t.name: t for t in (
    Tool(name="estimate", positional="model", verb=_verb("estimate"),
         description="Memory, largest context and batch, and prefill / decode speed of serving a model on one device "
                     "(sizeup estimate). A configuration that does not fit comes back with fits=false and "
                     "would_fit: the changes that would make it fit.",
         schema=_schema("inference", "EstimateOptions", "model", _MODEL, required=("device",))),
    Tool(name="fit", positional="device", verb=_verb("fit"),
         description="Which models run on a device, under which engine (llama.cpp GGUF, vLLM bf16 / fp8 / AWQ / GPTQ) "
                     "and format, and how fast, fastest first (sizeup fit); task chat, code or finetune.",
         schema=_schema("fitting", "FitOptions", "device", "a catalog device name: 'rtx-4060-ti-16gb', '4090', "
                                                           "'M3 Max', 'h100'")),
    Tool(name="compare", positional="model", verb=_verb("compare"),
         description="One model on many devices: per device the most precise format that fits, decode tokens/s and "
                     "the price per million tokens (sizeup estimate MODEL --devices).",
         schema=_schema("devices", "CompareOptions", "model", _MODEL)),
    Tool(name="train", positional="model", verb=_verb("train"),
         description="Memory, step time, MFU, time and cost of training or fine-tuning (full, LoRA, QLoRA, freeze, "
                     "DoRA) on a device (sizeup train).",
         schema=_schema("training", "TrainOptions", "model", _MODEL, required=("device",))),
    Tool(name="plan", positional="scenario", verb=_verb("plan"),
         description="The cheapest setup that meets a scenario's SLA or deadline, with its requirement sheet (sizeup "
                     "plan). scenario: a SCENARIO.yaml path, or a model name for a quick plan from the options.",
         schema=_schema("planning", "PlanOptions", "scenario", "a SCENARIO.yaml path on the server's machine, or a "
                                                               "model for a quick plan")),
)}


def call_tool(name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
    """The verb's `to_dict()` for the arguments; a bad name or argument raises a `SizeupError` (its message is
    the one line to show)."""
    tool = TOOLS.get(name)
    if tool is None:
        raise ConfigError(f"unknown tool {name!r}: expected one of {', '.join(TOOLS)}")
    args = dict(arguments or {})
    target = args.pop(tool.positional, None)
    if not isinstance(target, str) or not target.strip():
        raise ConfigError(f"{name}: '{tool.positional}' is required (a string)")
    refused = [k for k in args if k in _LEFT_OUT]
    if refused:
        raise ConfigError(f"{name}: option {refused[0]!r} is not available to MCP clients")
    if tool.positional != "device":
        _refuse_code(name, target)
    if name == "plan" and target.lower().endswith((".yaml", ".yml")):
        from sizeup.plan.scenario import load_scenario

        scenario = load_scenario(target)
        _refuse_code(name, scenario.model)
        return tool.verb()(scenario, **args).to_dict()
    return tool.verb()(target, **args).to_dict()


def _refuse_code(tool: str, model: str) -> None:
    """FILE.py:FACTORY and package.module:FACTORY name code to import; no tool call runs code."""
    if ":" in model:
        raise ConfigError(f"{tool}: {model!r} names Python code to import (FILE.py:FACTORY): MCP clients may name "
                          "presets, configs and model files only")
