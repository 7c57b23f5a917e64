"""`plan`: the cheapest setup that meets a scenario's SLA or deadline, and its compute requirement sheet, as
`sizeup plan SCENARIO.yaml` (or a quick plan from a model name and a few options)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sizeup.api.options import Options, option
from sizeup.errors import ConfigError
from sizeup.units import MAX_REQUESTS_PER_S, MAX_SLA_S, MAX_TOKENS, MAX_TRAINING_TOKENS, MAX_USERS

__all__ = ["PlanOptions", "PlanReport", "QUICK_OPTIONS", "QUICK_TASK_OPTIONS", "plan"]

QUICK_OPTIONS = ("task", "users", "rps", "prompt", "output", "ttft_p95", "tpot_p95", "devices", "engine", "tokens")
"""The options that make a quick plan's scenario; refused beside a scenario given whole."""

_SERVED = ("users", "rps", "prompt", "output", "ttft_p95", "tpot_p95", "devices", "engine")
QUICK_TASK_OPTIONS: dict[str, tuple[str, ...]] = {
    "chat": _SERVED, "api": _SERVED,
    "batch": ("prompt", "output", "devices", "engine", "tokens"),
    "finetune": ("devices", "tokens"), "pretrain": ("devices", "tokens"),
    "edge": ("prompt", "output", "tpot_p95", "devices", "engine"),
}
"""The quick options each task reads (besides `task`); any other is refused in one line, never ignored: a job has
no users, request rate or latency targets (batch reads the tokens per request, its engine and its length), a
training run no per-request lengths or serving engine, an edge board one stream (no users, rate or TTFT target;
its per-token latency is --tpot-p95)."""

_OPTION_TEXT = {"users": ("--users", "users sending requests"), "rps": ("--rps", "a request rate"),
                "prompt": ("--prompt", "prompt tokens per request"), "output": ("--output", "output tokens per request"),
                "ttft_p95": ("--ttft-p95", "a time-to-first-token target"),
                "tpot_p95": ("--tpot-p95", "a per-token latency target"), "devices": ("--device", "devices"),
                "engine": ("--engine", "a serving engine"), "tokens": ("--tokens", "a job's length")}
"""Option -> (its flag on the command line, what it sets): the words of a refusal."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanOptions(Options):
    """A quick plan's scenario (when `plan` is given a model name rather than a scenario), and the pricing."""

    task: Literal["chat", "api", "batch", "finetune", "pretrain", "edge"] = option("chat", "the job")
    users: float | None = option(None, "chat/api: users, each sending 20 requests per hour, all in the busiest hour",
                                 minimum=1, maximum=MAX_USERS)
    rps: float | None = option(None, "chat/api: peak requests per second", minimum=1e-9, maximum=MAX_REQUESTS_PER_S)
    prompt: int | None = option(None, "chat/api/batch/edge: prompt tokens per request (default: chat/api 800, "
                                      "batch 512, edge 256)", minimum=1, maximum=MAX_TOKENS)
    output: int | None = option(None, "chat/api/batch/edge: output tokens per request (default: chat/api 250, "
                                      "batch 256, edge 128)", minimum=1, maximum=MAX_TOKENS)
    ttft_p95: float | None = option(None, "SLA: p95 time to first token, seconds", minimum=1e-9, maximum=MAX_SLA_S)
    tpot_p95: float | None = option(None, "SLA: p95 time per output token, seconds", minimum=1e-9, maximum=MAX_SLA_S)
    devices: tuple[str, ...] = option((), "allowed devices (default: every catalog device with an offer); an edge "
                                          "plan's one board")
    tokens: float | None = option(None, "finetune / pretrain: tokens to train on; batch: output tokens to generate "
                                        "(e.g. 1e9)", minimum=1, maximum=MAX_TRAINING_TOKENS)
    engine: str | None = option(None, "chat/api/batch/edge: the engine, NAME or NAME@RELEASE (default: the task's "
                                      "of data/engines/defaults.yaml: vLLM; llama.cpp on an edge board)")
    electricity: float | None = option(None, "electricity price for buy vs rent, USD per kWh (overrides the "
                                             "scenario's budget.electricity_usd_per_kwh; default 0.15, assumed)",
                                       minimum=0, maximum=100)
    calibration: str | None = option(None, "price the device this profile from 'sizeup calibrate' was measured on "
                                           "with its measured efficiencies (the device must be in the catalog)")
    db: str | None = option(None, "run database holding the calibration (default: the user data folder)")
    catalog: tuple[str | Path, ...] = option((), "extra folders of device/offer YAML files")


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanReport:
    """The plan (`sizeup.plan.types.PlanResult`: every option tried, the chosen one) and its sheet
    (`sizeup.plan.sheet.Sheet`, what every renderer formats)."""

    result: Any
    sheet: Any

    @property
    def meets(self) -> bool:
        """Whether any configuration meets the scenario (`sizeup plan` exits 2 when none does)."""
        return self.result.meets

    def to_dict(self) -> dict[str, Any]:
        return self.sheet.to_dict() | {"plan": self.result.to_dict()}


def plan(scenario: str | Path | dict | Any, options: PlanOptions | None = None, /, **changes: Any) -> PlanReport:
    """Plan `scenario`: a SCENARIO.yaml path, a scenario as a dict (the YAML's keys), a parsed `Scenario`, or a
    model name for a quick plan from the options (`PlanOptions`' fields)."""
    from dataclasses import replace

    from sizeup.api.calibration import calibrated_scope, load_calibration
    from sizeup.api.inference import check_scenario_context
    from sizeup.api.options import build_options
    from sizeup.hardware.catalog import load_catalog
    from sizeup.plan.recommend import plan_scenario
    from sizeup.plan.sheet import build_sheet

    o = build_options(PlanOptions, options, changes, "plan")
    parsed = _scenario(scenario, o)
    if o.electricity is not None:
        if parsed.task not in ("chat", "api", "vision", "edge"):
            raise ConfigError(f"--electricity {o.electricity:g}: buy vs rent is priced for serving and edge plans, "
                              f"not for task {parsed.task!r}")
        parsed = replace(parsed, budget=replace(parsed.budget, electricity_usd_per_kwh=o.electricity))
    check_scenario_context(parsed)
    catalog = load_catalog(o.catalog)
    devices = []
    profile = load_calibration(o.calibration, o.db, o.devices, engine=o.engine)  # None: any engine's fit
    if profile is not None:
        if not profile.catalog_id:
            raise ConfigError(f"calibration {o.calibration!r} was measured on {profile.device.name}, which is not "
                              "in the catalog: plan prices catalog devices (use estimate/train --device local)")
        devices = [catalog.device(profile.catalog_id)]
    with calibrated_scope(profile, devices) as notes:
        result = plan_scenario(parsed, catalog)
    if notes:
        result = replace(result, assumptions=(*notes, *result.assumptions))
    return PlanReport(result=result, sheet=build_sheet(result))


def _scenario(scenario: str | Path | dict | Any, o: PlanOptions):
    from sizeup.plan.scenario import Scenario, load_scenario, parse_scenario

    quick = isinstance(scenario, (str, Path)) and Path(scenario).suffix not in (".yaml", ".yml")
    given = [k for k in o.changed() if k in QUICK_OPTIONS]
    if given and not quick:
        raise ConfigError(f"plan: option {given[0]!r} sets a quick plan (a model name), not read with a scenario; set "
                          "it in the scenario")
    if isinstance(scenario, Scenario):
        return scenario
    if isinstance(scenario, dict):
        return parse_scenario(scenario, source="scenario")
    if not isinstance(scenario, (str, Path)):
        raise ConfigError(f"plan: scenario must be a SCENARIO.yaml path, a dict or a model name, not "
                          f"{type(scenario).__name__}")
    if not quick:
        return load_scenario(scenario)
    return parse_scenario(quick_scenario(str(scenario), o), source="command line")


def quick_scenario(model: str, o: PlanOptions) -> dict[str, Any]:
    """The scenario of a quick plan, as the YAML's keys. An option the task does not read is refused
    (QUICK_TASK_OPTIONS), never ignored."""
    _refuse_unread(o)
    data: dict[str, Any] = {"name": f"{model}-{o.task}", "model": model, "task": o.task, "constraints": {}}
    jobs = ("batch", "finetune", "pretrain")
    if o.task in jobs:
        if o.tokens is None:
            raise ConfigError(f"--task {o.task} needs --tokens N: the "
                              + ("output tokens to generate" if o.task == "batch" else "tokens to train on")
                              + " (e.g. 1e9)")
        data["job"] = {"tokens": o.tokens}
    if o.task == "edge":  # one board, bought: the scenario's edge.device, not a list of allowed devices
        if len(o.devices) != 1:
            raise ConfigError("--task edge plans one board: give it as --device NAME (e.g. jetson-orin-nano)"
                              + (f", not {len(o.devices)}" if o.devices else ""))
        if o.tpot_p95 is None:
            raise ConfigError("--task edge needs --tpot-p95 S: the per-token latency the board must keep (e.g. 100ms)")
        data["edge"] = {"device": o.devices[0], "latency_s": o.tpot_p95}
    elif o.devices:
        data["constraints"]["devices"] = list(o.devices)
    if o.engine:
        data["constraints"]["engines"] = [o.engine]  # none: the task's default (data/engines/defaults.yaml)
    if o.task in ("batch", "edge"):  # one request's lengths; the task's defaults (plan.scenario) where not given
        lengths = {k: v for k, v in (("prompt_tokens", o.prompt), ("output_tokens", o.output)) if v is not None}
        if lengths:
            data["traffic"] = lengths
    if o.task in ("chat", "api"):
        traffic: dict[str, Any] = {"prompt_tokens": 800 if o.prompt is None else o.prompt,
                                   "output_tokens": 250 if o.output is None else o.output}
        if o.rps is not None:
            traffic["peak_requests_per_s"] = o.rps
        else:
            traffic["users"] = 1 if o.users is None else o.users
        data["traffic"] = traffic
        sla = {}
        if o.ttft_p95 is not None:
            sla["ttft_p95_s"] = o.ttft_p95
        if o.tpot_p95 is not None:
            sla["tpot_p95_s"] = o.tpot_p95
        data["sla"] = sla
    return data


def _refuse_unread(o: PlanOptions) -> None:
    """Refuse, in one line naming it, a quick option that `o.task` does not read."""
    reads = QUICK_TASK_OPTIONS[o.task]
    for name, value in o.changed().items():
        if name not in _OPTION_TEXT or name in reads:
            continue
        flag, what = _OPTION_TEXT[name]
        shown = (f"{value:,.0f}" if name in ("tokens", "users") else f"{value:g} s" if name.endswith("_p95")
                 else f"{value:g}") if isinstance(value, (int, float)) else value
        readers = [t for t, names in QUICK_TASK_OPTIONS.items() if name in names]
        raise ConfigError(f"{flag} {shown}: {what}, read by --task {', '.join(readers)}; --task {o.task} does not "
                          f"read it" + _UNREAD_HINTS.get((o.task, name), ""))


_UNREAD_HINTS = {("batch", "users"): " (a batch job's size is --tokens)", ("batch", "rps"): " (a batch job's size is "
                 "--tokens)", ("edge", "ttft_p95"): " (an edge board keeps --tpot-p95)",
                 ("edge", "users"): " (an edge board serves one stream)", ("edge", "rps"): " (an edge board serves "
                 "one stream)", ("finetune", "engine"): " (a training run's framework is a train flag)",
                 ("pretrain", "engine"): " (a training run's framework is a train flag)"}
