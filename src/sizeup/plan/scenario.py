"""A planning scenario: the model, the task, the traffic or the job, the SLA, the budget and the
constraints — from a YAML file or CLI flags, validated with errors that name the key.

```yaml
name: team-chat-api
model: llama-3.1-8b
task: api                      # chat | api | batch | finetune | pretrain | edge
traffic:                       # serving tasks
  requests_per_day: 200000     # or peak_requests_per_s, or users (+ requests_per_user_per_hour)
  peak_hour_share: 0.15        # share of the day's requests in the busiest hour (default 1/24 × 3)
  peak_factor: 1.5             # event multiplier on the peak hour
  prompt_tokens: 800           # mean; or {mean: 800, p95: 2000}
  output_tokens: 250
sla:                           # seconds; any of ttft / tpot / e2e at p50, p90, p95, p99, p999
  ttft_p95_s: 1.0
  tpot_p95_s: 0.05
job:                           # finetune / pretrain / batch
  method: lora                 # full | lora | qlora | freeze
  tokens: 2.0e8                # or epochs + dataset_tokens
  seq: 2048
  deadline_hours: 24
budget:
  monthly_usd: 8000            # serving; or job_usd for a job
constraints:
  devices: [l4, a10g, l40s, h100]
  providers: [aws, gcp, runpod]
  spot: false
  engines: [vllm]
  quantizations: [bf16, fp8, awq-int4]
  max_gpus: 8
  owned: [{device: rtx-4090, count: 2, purchase_usd: 1800, amortize_months: 36, power_usd_per_kwh: 0.15}]
edge:                          # edge tasks
  device: jetson-orin-nano-8gb
  latency_s: 0.1               # per token (LLM) or per request (vision)
  thermal_derate: 0.8
```
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sizeup.errors import ConfigError

__all__ = ["Scenario", "Traffic", "SLA", "Job", "Budget", "Constraints", "Owned", "Edge", "load_scenario",
           "parse_scenario", "TASKS", "SERVING_TASKS"]

TASKS = ("chat", "api", "batch", "finetune", "pretrain", "edge", "vision")
SERVING_TASKS = ("chat", "api", "vision")
PERCENTILES = ("p50", "p90", "p95", "p99", "p999")
METRICS = ("ttft", "tpot", "e2e")
DEFAULT_PEAK_HOUR_SHARE = 3 / 24
"""Without a profile: the busiest hour carries 3× the mean hourly load."""


class _Keys:
    """Typed access to one mapping of the scenario; every error names the key path."""

    def __init__(self, data: Any, where: str) -> None:
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ConfigError(f"scenario key {where!r}: expected a mapping, got {type(data).__name__}")
        self.data, self.where = data, where

    def _path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def allow(self, keys: set[str]) -> None:
        unknown = sorted(set(self.data) - keys)
        if unknown:
            raise ConfigError(f"scenario key {self._path(unknown[0])!r} is not known (expected one of: "
                              f"{', '.join(sorted(keys))})")

    def number(self, key: str, default: float | None = None, *, minimum: float = 0.0, strict: bool = False,
               required: bool = False) -> float | None:
        value = self.data.get(key)
        if value is None:
            if required:
                raise ConfigError(f"scenario key {self._path(key)!r} is missing")
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"scenario key {self._path(key)!r} = {value!r}: expected a number")
        if value < minimum or (strict and value == minimum):
            raise ConfigError(f"scenario key {self._path(key)!r} = {value!r}: expected a number "
                              f"{'>' if strict else '>='} {minimum:g}")
        return float(value)

    def text(self, key: str, default: str | None = None, choices: tuple[str, ...] | None = None) -> str | None:
        value = self.data.get(key, default)
        if value is None:
            return None
        if not isinstance(value, str):
            raise ConfigError(f"scenario key {self._path(key)!r} = {value!r}: expected a string")
        if choices and value not in choices:
            raise ConfigError(f"scenario key {self._path(key)!r} = {value!r}: expected one of {', '.join(choices)}")
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.data.get(key)
        if value is None:
            return ()
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"scenario key {self._path(key)!r}: expected a list of names")
        return tuple(value)

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise ConfigError(f"scenario key {self._path(key)!r} = {value!r}: expected true or false")
        return value

    def sub(self, key: str) -> _Keys:
        return _Keys(self.data.get(key), self._path(key))


@dataclass(frozen=True, slots=True, kw_only=True)
class Traffic:
    peak_requests_per_s: float
    """At the busiest hour, event factor included."""
    base_requests_per_s: float
    """Mean over the day."""
    prompt_tokens: int
    output_tokens: int
    prompt_p95_tokens: int
    output_p95_tokens: int
    peak_factor: float = 1.0
    description: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class SLA:
    targets: dict[str, float] = field(default_factory=dict)
    """"ttft_p95" -> seconds, …"""

    @property
    def empty(self) -> bool:
        return not self.targets


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    method: str = "lora"
    tokens: int = 0
    seq: int = 2048
    deadline_hours: float | None = None
    rank: int = 16
    global_batch: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Budget:
    monthly_usd: float | None = None
    job_usd: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Owned:
    device: str
    count: int
    purchase_usd: float
    amortize_months: float = 36
    power_usd_per_kwh: float = 0.15


@dataclass(frozen=True, slots=True, kw_only=True)
class Constraints:
    devices: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()
    spot: bool = False
    engines: tuple[str, ...] = ("vllm",)
    quantizations: tuple[str, ...] = ("bf16", "fp8", "awq-int4")
    max_gpus: int = 8
    owned: tuple[Owned, ...] = ()
    headroom: float = 0.2
    """Capacity kept free at the peak."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Edge:
    device: str
    latency_s: float
    thermal_derate: float = 0.8


@dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    name: str
    model: str
    task: str
    traffic: Traffic | None = None
    sla: SLA = field(default_factory=SLA)
    job: Job | None = None
    budget: Budget = field(default_factory=Budget)
    constraints: Constraints = field(default_factory=Constraints)
    edge: Edge | None = None
    input_shape: str | None = None
    """Vision tasks: the input of one request, e.g. 1x3x640x640, for a torch target."""
    source: str = ""


def _tokens(keys: _Keys, key: str, default: int) -> tuple[int, int]:
    value = keys.data.get(key)
    if value is None:
        return default, default
    if isinstance(value, dict):
        sub = keys.sub(key)
        sub.allow({"mean", "p95"})
        mean = int(sub.number("mean", required=True, minimum=1))
        return mean, int(sub.number("p95", mean, minimum=mean))
    return int(keys.number(key, minimum=1)), int(keys.number(key, minimum=1))


def _traffic(keys: _Keys) -> Traffic:
    keys.allow({"requests_per_day", "peak_requests_per_s", "users", "requests_per_user_per_hour", "peak_hour_share",
                "peak_factor", "prompt_tokens", "output_tokens", "profile"})
    factor = keys.number("peak_factor", 1.0, minimum=1.0)
    prompt, prompt_p95 = _tokens(keys, "prompt_tokens", 512)
    output, output_p95 = _tokens(keys, "output_tokens", 256)
    share = keys.number("peak_hour_share", None, minimum=0.0, strict=True)
    profile = keys.data.get("profile")
    if profile is not None:
        if not (isinstance(profile, list) and len(profile) == 24 and all(isinstance(v, (int, float)) and v >= 0
                                                                        for v in profile) and sum(profile) > 0):
            raise ConfigError("scenario key 'traffic.profile': expected 24 non-negative hourly weights")
        share = max(profile) / sum(profile)
    if share is not None and share > 1:
        raise ConfigError(f"scenario key 'traffic.peak_hour_share' = {share}: expected a fraction <= 1")
    share = share or DEFAULT_PEAK_HOUR_SHARE
    per_day = keys.number("requests_per_day", None, minimum=0.0, strict=True)
    peak = keys.number("peak_requests_per_s", None, minimum=0.0, strict=True)
    users = keys.number("users", None, minimum=1.0)
    if per_day is None and peak is None and users is None:
        raise ConfigError("scenario key 'traffic' needs requests_per_day, peak_requests_per_s or users")
    if users is not None and per_day is None and peak is None:
        per_hour = keys.number("requests_per_user_per_hour", 20.0, minimum=0.0, strict=True)
        peak = users * per_hour / 3600  # all users active in the busiest hour
        base = peak * 0.25
        text = f"{users:,.0f} users × {per_hour:g} requests/hour at the peak"
    elif per_day is not None:
        base = per_day / 86400
        peak = peak or per_day * share / 3600
        text = f"{per_day:,.0f} requests/day, {share:.0%} in the busiest hour"
    else:
        base = peak / 3
        text = f"{peak:g} requests/s at the peak"
    return Traffic(peak_requests_per_s=peak * factor, base_requests_per_s=base, prompt_tokens=prompt,
                   output_tokens=output, prompt_p95_tokens=prompt_p95, output_p95_tokens=output_p95,
                   peak_factor=factor, description=text + (f", ×{factor:g} for events" if factor > 1 else ""))


def _sla(keys: _Keys) -> SLA:
    allowed = {f"{m}_{p}_s" for m in METRICS for p in PERCENTILES}
    keys.allow(allowed)
    targets = {}
    for key in keys.data:
        targets[key.removesuffix("_s")] = keys.number(key, minimum=0.0, strict=True)
    return SLA(targets=targets)


def parse_scenario(data: Any, source: str = "scenario") -> Scenario:
    """A scenario from its YAML mapping; errors name the offending key."""
    root = _Keys(data, "")
    root.allow({"name", "model", "task", "traffic", "sla", "job", "budget", "constraints", "edge", "input_shape"})
    task = root.text("task", "api", TASKS)
    model = root.text("model")
    if not model:
        raise ConfigError("scenario key 'model' is missing")
    traffic = _traffic(root.sub("traffic")) if task in SERVING_TASKS else None
    job = None
    if task in ("finetune", "pretrain", "batch"):
        j = root.sub("job")
        j.allow({"method", "tokens", "epochs", "dataset_tokens", "seq", "deadline_hours", "rank", "global_batch"})
        tokens = j.number("tokens", None, minimum=0.0, strict=True)
        if tokens is None:
            epochs = j.number("epochs", None, minimum=0.0, strict=True)
            dataset = j.number("dataset_tokens", None, minimum=0.0, strict=True)
            if epochs is None or dataset is None:
                raise ConfigError("scenario key 'job' needs tokens, or epochs and dataset_tokens")
            tokens = epochs * dataset
        job = Job(method=j.text("method", "full" if task == "pretrain" else "lora",
                                ("full", "lora", "qlora", "freeze", "dora")),
                  tokens=int(tokens), seq=int(j.number("seq", 2048, minimum=1)),
                  deadline_hours=j.number("deadline_hours", None, minimum=0.0, strict=True),
                  rank=int(j.number("rank", 16, minimum=1)),
                  global_batch=None if j.data.get("global_batch") is None else int(j.number("global_batch", minimum=1)))
    b = root.sub("budget")
    b.allow({"monthly_usd", "job_usd"})
    c = root.sub("constraints")
    c.allow({"devices", "providers", "regions", "spot", "engines", "quantizations", "max_gpus", "owned", "headroom"})
    owned = []
    for i, item in enumerate(c.data.get("owned") or []):
        o = _Keys(item, f"constraints.owned[{i}]")
        o.allow({"device", "count", "purchase_usd", "amortize_months", "power_usd_per_kwh"})
        device = o.text("device")
        if not device:
            raise ConfigError(f"scenario key 'constraints.owned[{i}].device' is missing")
        owned.append(Owned(device=device, count=int(o.number("count", 1, minimum=1)),
                           purchase_usd=o.number("purchase_usd", required=True),
                           amortize_months=o.number("amortize_months", 36, minimum=1),
                           power_usd_per_kwh=o.number("power_usd_per_kwh", 0.15)))
    constraints = Constraints(
        devices=c.strings("devices"), providers=c.strings("providers"), regions=c.strings("regions"),
        spot=c.flag("spot", False), engines=c.strings("engines") or ("vllm",),
        quantizations=c.strings("quantizations") or ("bf16", "fp8", "awq-int4"),
        max_gpus=int(c.number("max_gpus", 8, minimum=1)), owned=tuple(owned),
        headroom=c.number("headroom", 0.2, minimum=0.0))
    if constraints.headroom >= 1:
        raise ConfigError(f"scenario key 'constraints.headroom' = {constraints.headroom}: expected a fraction < 1")
    edge = None
    if task == "edge":
        e = root.sub("edge")
        e.allow({"device", "latency_s", "thermal_derate"})
        device = e.text("device")
        if not device:
            raise ConfigError("scenario key 'edge.device' is missing")
        edge = Edge(device=device, latency_s=e.number("latency_s", required=True, minimum=0.0, strict=True),
                    thermal_derate=e.number("thermal_derate", 0.8, minimum=0.0, strict=True))
        if edge.thermal_derate > 1:
            raise ConfigError(f"scenario key 'edge.thermal_derate' = {edge.thermal_derate}: expected a fraction <= 1")
    return Scenario(name=root.text("name", Path(source).stem if source else "scenario"), model=model, task=task,
                    traffic=traffic, sla=_sla(root.sub("sla")), job=job,
                    budget=Budget(monthly_usd=b.number("monthly_usd"), job_usd=b.number("job_usd")),
                    constraints=constraints, edge=edge, input_shape=root.text("input_shape"), source=source)


def load_scenario(path: str | Path) -> Scenario:
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"scenario file {str(path)!r} does not exist")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise ConfigError(f"{path}: not valid YAML{f' (line {mark.line + 1})' if mark else ''}") from None
    return parse_scenario(data, str(path))
