"""A planning scenario: the model, the task, the traffic or the job, the SLA, the budget and the
constraints — from a YAML file or CLI flags, validated with errors that name the key.

Strict: a key the schema does not know is refused with the closest known one, and a key the task does
not read (`KEY_TASKS`: `sla` in a fine-tune, `traffic.users` on an edge device) is refused with the tasks
that read it. The file is read by `sizeup.yaml_strict` (YAML 1.2 numbers and booleans, no key twice).

```yaml
name: team-chat-api
model: llama-3.1-8b
task: api                      # chat | api | batch | finetune | pretrain | edge
traffic:                       # serving tasks (batch and edge: prompt_tokens and output_tokens only)
  requests_per_day: 200000     # or peak_requests_per_s, or users (+ requests_per_user_per_hour)
  peak_hour_share: 0.15        # share of the day's requests in the busiest hour (default 1/24 × 3)
  peak_factor: 1.5             # event multiplier on the peak hour
  profile: [1, 1, ...]         # optional: 24 hourly weights of the day (the busiest hour sets the peak)
  peak_hours_per_day: 8        # without a profile: hours a day at the busiest hour's rate (default 1)
  burst_hours_per_month: 20    # hours a month at the event rate (peak_factor); default: all peak hours
  prompt_tokens: 800           # mean; or {mean: 800, p95: 2000}
  output_tokens: 250
  images_per_request: 1        # vision-language models: images through the vision tower (their tokens in prompt_tokens)
  image_size: 448              # pixels per side (qwen2_vl reads images at their size; llava resizes to its own)
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
  pricing: on-demand           # the basis every cost is quoted on: on-demand | reserved-1y | spot | mixed
                               # (mixed: the autoscaling floor on 1-year reserved capacity, the rest
                               # on-demand, or spot when allowed)
  electricity_usd_per_kwh: 0.30  # buy vs rent (serving, edge): the energy of bought hardware (default 0.15)
                               # (default: spot when constraints.spot, else on-demand)
constraints:
  devices: [l4, a10g, l40s, h100]
  providers: [aws, gcp, runpod]
  spot: false
  engines: [vllm]
  quantizations: [bf16, fp8, awq-int4]
  max_gpus: 8
  redundancy: true             # a spare replica (N+1); default yes when renting, no on owned hardware
  owned: [{device: rtx-4090, count: 2, purchase_usd: 1800, amortize_months: 36, power_usd_per_kwh: 0.15}]
edge:                          # edge tasks
  device: jetson-orin-nano-8gb
  latency_s: 0.1               # per token (LLM) or per request (vision)
  thermal_derate: 0.8
  price_usd: 249               # optional: the device's purchase price (the catalog holds none)
```
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sizeup.errors import ConfigError
from sizeup.plan.scenario_keys import Keys, type_name
from sizeup.sources import admit_file
from sizeup.units import (MAX_BATCH, MAX_GPUS, MAX_NAME_CHARS, MAX_REQUESTS_PER_S, MAX_SLA_S, MAX_TOKENS,
                          MAX_TRAINING_TOKENS, MAX_USD, MAX_USERS, KIB, check_number)
from sizeup.yaml_depth import MAX_YAML_NESTING

__all__ = ["Scenario", "Traffic", "SLA", "Job", "Budget", "Constraints", "Owned", "Edge", "load_scenario",
           "parse_scenario", "TASKS", "SERVING_TASKS", "KEY_TASKS", "MAX_SCENARIO_BYTES"]

TASKS = ("chat", "api", "batch", "finetune", "pretrain", "edge", "vision")
SERVING_TASKS = ("chat", "api", "vision")
PERCENTILES = ("p50", "p90", "p95", "p99", "p999")
METRICS = ("ttft", "tpot", "e2e")
DEFAULT_PEAK_HOUR_SHARE = 3 / 24
"""Without a profile: the busiest hour carries 3× the mean hourly load."""

MAX_SCENARIO_BYTES = 1024 * KIB
"""A scenario is a page of YAML; a larger file is refused before it is parsed."""
MAX_NESTING = MAX_YAML_NESTING
"""Deepest nesting read (a scenario needs 4); deeper YAML is refused before parsing (libyaml would
overflow the C stack, PyYAML the recursion limit)."""
MAX_OWNED = 64
MAX_DEADLINE_HOURS = 100_000.0
MAX_EPOCHS = 10_000.0
MAX_RANK = 65_536

_LLM = ("chat", "api")
_JOBS = ("finetune", "pretrain", "batch")
_TRAINING = ("finetune", "pretrain")
_RENTED = ("chat", "api", "vision", *_JOBS)
"""Tasks priced on cloud offers (an edge device is bought, one of it)."""
_RATE_KEYS = ("requests_per_day", "peak_requests_per_s", "users", "requests_per_user_per_hour", "peak_hour_share",
              "peak_factor", "profile", "peak_hours_per_day", "burst_hours_per_month")
_LENGTHS = ("chat", "api", "batch", "edge")
"""Tasks that read traffic.prompt_tokens and traffic.output_tokens (batch and edge: those two only)."""

KEY_TASKS: dict[str, tuple[str, ...]] = {
    "name": TASKS, "model": TASKS, "task": TASKS,
    "traffic": ("chat", "api", "vision", "batch", "edge"), "sla": SERVING_TASKS, "job": _JOBS, "budget": (*_RENTED, "edge"),
    "constraints": (*_RENTED, "edge"), "edge": ("edge",), "input_shape": ("vision",), "runtime": ("vision",),
    **{f"traffic.{k}": SERVING_TASKS for k in _RATE_KEYS},
    **{f"traffic.{k}{sub}": _LENGTHS for k in ("prompt_tokens", "output_tokens") for sub in ("", ".mean", ".p95")},
    "traffic.images_per_request": _LLM, "traffic.image_size": _LLM,
    **{f"sla.{m}_{p}_s": SERVING_TASKS if m == "e2e" else _LLM for m in METRICS for p in PERCENTILES},
    "job.tokens": _JOBS, "job.deadline_hours": _JOBS,
    **{f"job.{k}": _TRAINING for k in ("method", "epochs", "dataset_tokens", "seq", "rank", "global_batch")},
    "budget.monthly_usd": SERVING_TASKS, "budget.job_usd": _JOBS, "budget.pricing": _RENTED,
    "budget.electricity_usd_per_kwh": (*SERVING_TASKS, "edge"),
    **{f"constraints.{k}": _RENTED for k in ("devices", "providers", "regions", "spot")},
    "constraints.engines": (*_LLM, "batch", "edge"), "constraints.owned": _LLM,
    "constraints.quantizations": (*SERVING_TASKS, "batch", "edge"),
    "constraints.max_gpus": (*_LLM, *_JOBS), "constraints.headroom": SERVING_TASKS,
    "constraints.redundancy": SERVING_TASKS,
    **{f"constraints.owned.{k}": _LLM for k in ("device", "count", "purchase_usd", "amortize_months",
                                                "power_usd_per_kwh")},
    **{f"edge.{k}": ("edge",) for k in ("device", "latency_s", "thermal_derate", "price_usd")},
}
"""Every key a scenario may hold ("section.key"), and the tasks that read it. Vision reads the request
rate (its input is `input_shape`, not tokens), only end-to-end SLA targets and `quantizations: [fp16]` or
fp32; batch generation reads tokens, deadline, the per-request lengths, engines and formats; an edge plan
reads its device, the lengths, and the engines and weight formats it may run (EDGE_FORMATS by default; the
engine a task takes when none is named: data/engines/defaults.yaml)."""

EDGE_FORMATS = ("bf16", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q3_k_m", "q2_k")
"""The formats an edge plan tries, high to low precision, when `constraints.quantizations` names none."""


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
    users: float | None = None
    """Where the scenario counts users (then the peak is users × requests_per_user_per_hour / 3600 × factor)."""
    requests_per_user_per_hour: float | None = None
    requests_per_day: float | None = None
    peak_hour_share: float | None = None
    images: int = 0
    image_hw: tuple[int, int] | None = None
    profile: tuple[float, ...] | None = None
    """24 hourly weights of the day, when the scenario gives them (plan.fleet bills the month by them)."""
    peak_hours_per_day: float | None = None
    """Without a profile: hours a day at the busiest hour's rate (None: 1, the busiest hour alone)."""
    burst_hours_per_month: float | None = None
    """Hours a month at the event rate (peak × peak_factor); None: every peak hour (conservative)."""


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
    electricity_usd_per_kwh: float | None = None
    """What a kWh costs where the hardware would run (buy vs rent; None: 0.15 assumed, plan.buy)."""
    pricing: str | None = None
    """The pricing basis the plan ranks and quotes on ("on-demand", "reserved-1y", "spot", "mixed"); None:
    spot when spot is allowed, else on-demand (plan.cost.pricing_basis)."""


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
    engines: tuple[str, ...] = ()
    """Engines to search ('NAME', 'NAME@RELEASE'); empty: the task's default (data/engines/defaults.yaml)."""
    quantizations: tuple[str, ...] = ("bf16", "fp8", "awq-int4")
    quantizations_given: bool = False
    """Whether the scenario named the formats (else a GGUF model prices the format its file stores)."""
    max_gpus: int = 8
    owned: tuple[Owned, ...] = ()
    headroom: float = 0.2
    """Capacity kept free at the peak."""
    redundancy: bool | None = None
    """A spare replica (N + 1): None means yes for rented capacity, no for owned hardware."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Edge:
    device: str
    latency_s: float
    thermal_derate: float = 0.8
    price_usd: float | None = None
    """What one device costs to buy (the catalog holds no device prices); None: reported as unknown."""


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
    runtime: str | None = None
    """Vision tasks: the runtime serving the model (data/efficiency/overheads.yaml), which sets the per-op
    overhead; None: pytorch-eager."""
    source: str = ""


def _tokens(keys: Keys, key: str, default: int) -> tuple[int, int]:
    """A token count: a whole number, or {mean, p95}."""
    value = keys.data.get(key)
    if value is None:
        return default, default
    if isinstance(value, dict):
        sub = keys.sub(key)
        sub.check(None, KEY_TASKS)  # the task was checked on the key itself
        mean = sub.count("mean", required=True, minimum=1, maximum=MAX_TOKENS)
        p95 = sub.count("p95", mean, minimum=1, maximum=MAX_TOKENS)
        if p95 < mean:
            raise ConfigError(f"scenario key {sub.path('p95')!r} = {p95:,}: expected at least the mean ({mean:,})")
        return mean, p95
    count = keys.count(key, minimum=1, maximum=MAX_TOKENS)
    return count, count


_LENGTH_DEFAULTS = {"batch": (512, 256), "edge": (256, 128)}
"""Prompt and output tokens per request when a batch or edge scenario gives no traffic section (the
planners' own defaults, plan.jobs and plan.edge)."""


def _lengths(keys: Keys, task: str) -> Traffic:
    """Batch generation and an edge device read only the lengths of one request."""
    prompt_default, output_default = _LENGTH_DEFAULTS[task]
    prompt, prompt_p95 = _tokens(keys, "prompt_tokens", prompt_default)
    output, output_p95 = _tokens(keys, "output_tokens", output_default)
    return Traffic(peak_requests_per_s=0.0, base_requests_per_s=0.0, prompt_tokens=prompt, output_tokens=output,
                   prompt_p95_tokens=prompt_p95, output_p95_tokens=output_p95,
                   description=f"prompt {prompt:,} and output {output:,} tokens per request")


def _traffic(keys: Keys) -> Traffic:
    side = keys.count("image_size", None, minimum=1, maximum=100_000)
    factor = keys.number("peak_factor", 1.0, minimum=1.0, maximum=1000.0)
    prompt, prompt_p95 = _tokens(keys, "prompt_tokens", 512)
    output, output_p95 = _tokens(keys, "output_tokens", 256)
    per_day = keys.number("requests_per_day", None, minimum=0.0, strict=True, maximum=MAX_REQUESTS_PER_S * 86400)
    peak = keys.number("peak_requests_per_s", None, minimum=0.0, strict=True, maximum=MAX_REQUESTS_PER_S)
    users = keys.number("users", None, minimum=1.0, maximum=MAX_USERS)
    per_user = keys.number("requests_per_user_per_hour", None, minimum=0.0, strict=True, maximum=3600.0 * 100)
    _one_rate(keys, per_day, peak, users, per_user)
    share = keys.number("peak_hour_share", None, minimum=0.0, strict=True, maximum=1.0)
    profile = keys.data.get("profile")
    weights = None
    if profile is not None:
        if not (isinstance(profile, list) and len(profile) == 24):
            raise ConfigError("scenario key 'traffic.profile': expected 24 non-negative hourly weights")
        weights = [check_number(v, what=f"scenario key 'traffic.profile[{i}]'", minimum=0.0, maximum=1e15)
                   for i, v in enumerate(profile)]
        if sum(weights) <= 0:
            raise ConfigError("scenario key 'traffic.profile': expected 24 non-negative hourly weights, not all 0")
        share = max(weights) / sum(weights)
    share = share or DEFAULT_PEAK_HOUR_SHARE
    peak_hours = keys.number("peak_hours_per_day", None, minimum=0.0, strict=True, maximum=24.0)
    if peak_hours is not None and weights is not None:
        raise ConfigError("scenario keys 'traffic.peak_hours_per_day' and 'traffic.profile': give one (the profile "
                          "already says which hours are busy)")
    bursts = keys.number("burst_hours_per_month", None, minimum=0.0, maximum=744.0)
    if users is not None:
        per_hour = 20.0 if per_user is None else per_user
        peak = users * per_hour / 3600  # all users active in the busiest hour
        base = peak * 0.25
        text = f"{users:,.0f} users × {per_hour:g} requests/hour at the peak"
        counted = {"users": users, "requests_per_user_per_hour": per_hour}
    elif per_day is not None:
        base = per_day / 86400
        counted = {} if peak else {"requests_per_day": per_day, "peak_hour_share": share}
        text = (f"{per_day:,.0f} requests/day, {peak:g} requests/s at the peak" if peak else
                f"{per_day:,.0f} requests/day, {share:.0%} in the busiest hour")
        peak = peak or per_day * share / 3600
    else:
        base = peak / 3
        text = f"{peak:g} requests/s at the peak"
        counted = {}
    return Traffic(peak_requests_per_s=peak * factor, base_requests_per_s=base, prompt_tokens=prompt,
                   output_tokens=output, prompt_p95_tokens=prompt_p95, output_p95_tokens=output_p95,
                   peak_factor=factor, description=text + (f", ×{factor:g} for events" if factor > 1 else ""),
                   images=keys.count("images_per_request", 0, minimum=0, maximum=10_000),
                   image_hw=(side, side) if side else None,
                   profile=None if weights is None else tuple(float(w) for w in weights),
                   peak_hours_per_day=peak_hours, burst_hours_per_month=bursts, **counted)


def _one_rate(keys: Keys, per_day, peak, users, per_user) -> None:
    """Refuse traffic keys that another key overrides: users beside a request rate, the per-user rate
    without users, the peak-hour share or profile without requests_per_day or beside the peak rate."""
    if per_day is None and peak is None and users is None:
        raise ConfigError("scenario key 'traffic' needs requests_per_day, peak_requests_per_s or users")
    rates = [k for k, v in (("requests_per_day", per_day), ("peak_requests_per_s", peak)) if v is not None]
    if users is not None and rates:
        raise ConfigError(f"scenario keys 'traffic.users' and 'traffic.{rates[0]}' both set the request rate: give "
                          "one of them")
    if per_user is not None and users is None:
        raise ConfigError("scenario key 'traffic.requests_per_user_per_hour' is read only with 'traffic.users'")
    shaped = [k for k in ("peak_hour_share", "profile") if keys.data.get(k) is not None]
    if len(shaped) == 2:
        raise ConfigError("scenario keys 'traffic.peak_hour_share' and 'traffic.profile' both set the busiest hour's "
                          "share: give one of them")
    if shaped and (per_day is None or peak is not None):
        why = "beside 'traffic.peak_requests_per_s', which sets the peak itself" if peak is not None else \
            "without 'traffic.requests_per_day'"
        raise ConfigError(f"scenario key 'traffic.{shaped[0]}' is not read {why}")


def _sla(keys: Keys) -> SLA:
    return SLA(targets={key.removesuffix("_s"): keys.number(key, minimum=0.0, strict=True, maximum=MAX_SLA_S)
                        for key in keys.data if keys.data[key] is not None})


def _job(j: Keys, task: str) -> Job:
    tokens = j.number("tokens", None, minimum=0.0, strict=True, maximum=MAX_TRAINING_TOKENS)
    if tokens is None:
        if task == "batch":
            raise ConfigError("scenario key 'job.tokens' is missing (the output tokens to generate)")
        epochs = j.number("epochs", None, minimum=0.0, strict=True, maximum=MAX_EPOCHS)
        dataset = j.number("dataset_tokens", None, minimum=0.0, strict=True, maximum=MAX_TRAINING_TOKENS)
        if epochs is None or dataset is None:
            raise ConfigError("scenario key 'job' needs tokens, or epochs and dataset_tokens")
        tokens = epochs * dataset
        if tokens > MAX_TRAINING_TOKENS:
            raise ConfigError(f"scenario keys 'job.epochs' x 'job.dataset_tokens' = {tokens:.3g} tokens: expected "
                              f"at most {MAX_TRAINING_TOKENS:.0e}".replace("e+", "e"))
    elif "epochs" in j.data or "dataset_tokens" in j.data:
        raise ConfigError("scenario keys 'job.tokens' and 'job.epochs'/'job.dataset_tokens': give tokens, or epochs "
                          "and dataset_tokens, not both")
    if tokens < 1:
        raise ConfigError(f"scenario key 'job.tokens' = {tokens:g}: expected at least 1 token")
    return Job(method=j.text("method", "full" if task == "pretrain" else "lora",
                             ("full", "lora", "qlora", "freeze", "dora")),
               tokens=int(tokens), seq=j.count("seq", 2048, maximum=MAX_TOKENS),
               deadline_hours=j.number("deadline_hours", None, minimum=0.0, strict=True, maximum=MAX_DEADLINE_HOURS),
               rank=j.count("rank", 16, maximum=MAX_RANK), global_batch=j.count("global_batch", None, maximum=MAX_BATCH))


def _owned(c: Keys, task: str) -> tuple[Owned, ...]:
    owned = []
    items = c.data.get("owned") or []
    if not isinstance(items, list):
        raise ConfigError(f"scenario key 'constraints.owned': expected a list of mappings, got {type_name(items)}")
    if len(items) > MAX_OWNED:
        raise ConfigError(f"scenario key 'constraints.owned': {len(items):,} entries; expected at most {MAX_OWNED}")
    for i, item in enumerate(items):
        o = Keys(item, f"constraints.owned[{i}]")
        o.check(task, KEY_TASKS, section="constraints.owned")
        device = o.text("device", limit=MAX_NAME_CHARS)
        if not device:
            raise ConfigError(f"scenario key 'constraints.owned[{i}].device' is missing")
        owned.append(Owned(device=device, count=o.count("count", 1, maximum=MAX_GPUS),
                           purchase_usd=o.number("purchase_usd", required=True, maximum=MAX_USD),
                           amortize_months=o.number("amortize_months", 36, minimum=1, maximum=1200.0),
                           power_usd_per_kwh=o.number("power_usd_per_kwh", 0.15, maximum=100.0)))
    return tuple(owned)


def _constraints(c: Keys, task: str) -> Constraints:
    quantizations = c.strings("quantizations")
    if task == "vision" and set(quantizations) - {"fp16", "fp32"}:
        bad = sorted(set(quantizations) - {"fp16", "fp32"})[0]
        raise ConfigError(f"scenario key 'constraints.quantizations' = {bad!r}: a vision model is served in fp16 or "
                          "fp32; expected fp16, fp32 or both")
    edge = task == "edge"
    return Constraints(
        devices=c.strings("devices"), providers=c.strings("providers"), regions=c.strings("regions"),
        spot=c.flag("spot", False), engines=c.strings("engines"),
        quantizations=quantizations or (EDGE_FORMATS if edge else ("bf16", "fp8", "awq-int4")),
        quantizations_given=bool(quantizations),
        max_gpus=c.count("max_gpus", 8, maximum=MAX_GPUS), owned=_owned(c, task),
        headroom=c.number("headroom", 0.2, minimum=0.0, below=1.0),
        redundancy=c.flag("redundancy", True) if c.data.get("redundancy") is not None else None)


def _edge(e: Keys) -> Edge:
    device = e.text("device", limit=MAX_NAME_CHARS)
    if not device:
        raise ConfigError("scenario key 'edge.device' is missing")
    return Edge(device=device, latency_s=e.number("latency_s", required=True, minimum=0.0, strict=True,
                                                  maximum=MAX_SLA_S),
                thermal_derate=e.number("thermal_derate", 0.8, minimum=0.0, strict=True, maximum=1.0),
                price_usd=e.number("price_usd", None, maximum=MAX_USD))


def parse_scenario(data: Any, source: str = "scenario") -> Scenario:
    """A scenario from its YAML mapping; errors name the offending key. Every key is checked against
    KEY_TASKS: unknown keys and keys the task does not read are refused."""
    root = Keys(data, "")
    task = root.text("task", "api", TASKS)
    sections = {name: root.sub(name) for name in ("traffic", "sla", "job", "budget", "constraints", "edge")}
    for keys in (root, *sections.values()):  # misspelt keys first, in every section; then what the task reads
        keys.check(None, KEY_TASKS)
    for keys in (root, *sections.values()):
        keys.check(task, KEY_TASKS)
    model = root.text("model")
    if not model:
        raise ConfigError("scenario key 'model' is missing")
    traffic = None
    if task in SERVING_TASKS:
        traffic = _traffic(sections["traffic"])
    elif task in _LENGTH_DEFAULTS and sections["traffic"].data:
        traffic = _lengths(sections["traffic"], task)
    b = sections["budget"]
    return Scenario(name=root.text("name", Path(source).stem if source else "scenario"), model=model, task=task,
                    traffic=traffic, sla=_sla(sections["sla"]),
                    job=_job(sections["job"], task) if task in _JOBS else None,
                    budget=Budget(monthly_usd=b.number("monthly_usd", maximum=MAX_USD),
                                  job_usd=b.number("job_usd", maximum=MAX_USD),
                                  pricing=b.text("pricing", None, ("on-demand", "reserved-1y", "spot", "mixed")),
                                  electricity_usd_per_kwh=b.number("electricity_usd_per_kwh", None, maximum=100.0)),
                    constraints=_constraints(sections["constraints"], task),
                    edge=_edge(sections["edge"]) if task == "edge" else None, input_shape=root.text("input_shape"),
                    runtime=root.text("runtime", limit=MAX_NAME_CHARS), source=source)


def load_scenario(path: str | Path) -> Scenario:
    """A scenario from a YAML file: at most MAX_SCENARIO_BYTES, UTF-8 (a BOM is accepted), no binary
    bytes, nested at most MAX_NESTING deep — each checked before the YAML is parsed — then read by
    `sizeup.yaml_strict` (YAML 1.2 numbers and booleans, no key twice, no alias bomb)."""
    from sizeup.files import read_regular
    from sizeup.yaml_strict import load_yaml

    path = admit_file(path, "scenario file")  # the web UI's policy: its own uploads only
    raw = read_regular(path, what="scenario file", error=ConfigError, limit=MAX_SCENARIO_BYTES)
    data = load_yaml(_decode(raw, path), str(path), ConfigError)
    return parse_scenario(data, str(path))


def _decode(raw: bytes, path: Path) -> str:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ConfigError(f"{path}: UTF-16 text; save the scenario as UTF-8")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start:,}); save the "
                          "scenario as UTF-8") from None
    bad = _CONTROL.search(text)
    if bad:
        line = text.count("\n", 0, bad.start()) + 1
        raise ConfigError(f"{path}: binary data, not a YAML scenario (control character {bad.group()!r} on line "
                          f"{line})")
    return text


_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


