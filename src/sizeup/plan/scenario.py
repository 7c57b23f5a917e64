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
  pricing: on-demand           # the basis every cost is quoted on: on-demand | reserved-1y | spot
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

from sizeup.engines.base import check_engines
from sizeup.errors import ConfigError
from sizeup.yaml_depth import MAX_YAML_NESTING, yaml_nesting_bound
from sizeup.units import (MAX_BATCH, MAX_GPUS, MAX_LIST_ITEMS, MAX_NAME_CHARS, MAX_REQUESTS_PER_S, MAX_SLA_S,
                          MAX_TOKENS, MAX_TRAINING_TOKENS, MAX_USD, MAX_USERS, KIB, check_number)

__all__ = ["Scenario", "Traffic", "SLA", "Job", "Budget", "Constraints", "Owned", "Edge", "load_scenario",
           "parse_scenario", "TASKS", "SERVING_TASKS", "MAX_SCENARIO_BYTES"]

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
MAX_TEXT_CHARS = 4096
"""A model path or name, a scenario name."""
MAX_OWNED = 64
MAX_DEADLINE_HOURS = 100_000.0
MAX_EPOCHS = 10_000.0
MAX_RANK = 65_536


class _Keys:
    """Typed access to one mapping of the scenario; every error names the key path."""

    def __init__(self, data: Any, where: str) -> None:
        if data is None:
            data = {}
        if not isinstance(data, dict):
            what = f"scenario key {where!r}" if where else "scenario"
            raise ConfigError(f"{what}: expected a mapping of keys, got {_type_name(data)}")
        self.data, self.where = data, where

    def _path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def _key(self, key: str) -> str:
        return f"scenario key {self._path(key)!r}"

    def allow(self, keys: set[str]) -> None:
        unknown = sorted(str(k) for k in set(self.data) - keys)
        if unknown:
            shown = unknown[0] if len(unknown[0]) <= 60 else unknown[0][:40] + "…"
            raise ConfigError(f"scenario key {self._path(shown)!r} is not known (expected one of: "
                              f"{', '.join(sorted(keys))})")

    def _numeric(self, key: str, required: bool, expected: str) -> int | float | None:
        """The raw value of `key`: None when absent (an error if `required`); a bool or a string refused."""
        value = self.data.get(key)
        if value is None:
            if required:
                raise ConfigError(f"{self._key(key)} is missing")
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{self._key(key)} = {_shown(value)}: expected {expected}")
        return value

    def number(self, key: str, default: float | None = None, *, minimum: float | None = 0.0, strict: bool = False,
               maximum: float | None = None, below: float | None = None, required: bool = False) -> float | None:
        """A finite number (not a bool, not a string) within the bounds; `strict`: > minimum."""
        value = self._numeric(key, required, "a number")
        if value is None:
            return default
        return check_number(value, what=self._key(key), minimum=None if strict else minimum,
                            above=minimum if strict else None, maximum=maximum, below=below)

    def count(self, key: str, default: int | None = None, *, minimum: int = 1, maximum: int,
              required: bool = False) -> int | None:
        """A whole number within the bounds (1.0 is read as 1; 1.5 is refused)."""
        value = self._numeric(key, required, "a whole number")
        if value is None:
            return default
        return int(check_number(value, what=self._key(key), integer=True, minimum=minimum, maximum=maximum))

    def text(self, key: str, default: str | None = None, choices: tuple[str, ...] | None = None,
             limit: int = MAX_TEXT_CHARS) -> str | None:
        value = self.data.get(key, default)
        if value is None:
            return None
        return _text(value, self._key(key), choices, limit)

    def strings(self, key: str) -> tuple[str, ...]:
        """A list of names (or one comma-separated string): duplicates dropped, at most MAX_LIST_ITEMS."""
        value = self.data.get(key)
        if value is None:
            return ()
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{self._key(key)}: expected a list of names")
        names = tuple(dict.fromkeys(v.strip() for v in value if v.strip()))
        if len(names) > MAX_LIST_ITEMS:
            raise ConfigError(f"{self._key(key)}: {len(names):,} different names; expected at most {MAX_LIST_ITEMS}")
        for name in names:
            _text(name, self._key(key), None, MAX_NAME_CHARS)
        return names

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise ConfigError(f"{self._key(key)} = {_shown(value)}: expected true or false")
        return value

    def sub(self, key: str) -> _Keys:
        return _Keys(self.data.get(key), self._path(key))


def _type_name(value: Any) -> str:
    return {list: "a list", str: "a string", int: "a number", float: "a number", bool: "true/false"}.get(
        type(value), type(value).__name__)


def _shown(value: Any) -> str:
    text = repr(value)
    size = len(value) if isinstance(value, (str, bytes, list, dict)) else len(text)
    unit = ("characters" if isinstance(value, (str, bytes)) else "entries" if isinstance(value, (list, dict))
            else "digits")
    return text if len(text) <= 60 else text[:40] + f"… ({size:,} {unit})"


def _text(value: Any, what: str, choices: tuple[str, ...] | None, limit: int) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{what} = {_shown(value)}: expected a string")
    if choices and value not in choices:
        raise ConfigError(f"{what} = {_shown(value)}: expected one of {', '.join(choices)}")
    if len(value) > limit:
        raise ConfigError(f"{what}: {len(value):,} characters; expected at most {limit:,}")
    if not value.isprintable():
        raise ConfigError(f"{what} = {_shown(value)}: expected printable text (no control characters)")
    return value


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
    pricing: str | None = None
    """The pricing basis the plan ranks and quotes on ("on-demand", "reserved-1y", "spot"); None: spot
    when spot is allowed, else on-demand (plan.cost.pricing_basis)."""


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
    """Engines to search ('vllm', 'vllm@0.10'); empty: the serving default of data/engines/defaults.yaml."""
    quantizations: tuple[str, ...] = ("bf16", "fp8", "awq-int4")
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


def _tokens(keys: _Keys, key: str, default: int) -> tuple[int, int]:
    """A token count: a whole number, or {mean, p95}."""
    value = keys.data.get(key)
    if value is None:
        return default, default
    if isinstance(value, dict):
        sub = keys.sub(key)
        sub.allow({"mean", "p95"})
        mean = sub.count("mean", required=True, minimum=1, maximum=MAX_TOKENS)
        p95 = sub.count("p95", mean, minimum=1, maximum=MAX_TOKENS)
        if p95 < mean:
            raise ConfigError(f"scenario key {sub._path('p95')!r} = {p95:,}: expected at least the mean ({mean:,})")
        return mean, p95
    count = keys.count(key, minimum=1, maximum=MAX_TOKENS)
    return count, count


def _traffic(keys: _Keys) -> Traffic:
    keys.allow({"requests_per_day", "peak_requests_per_s", "users", "requests_per_user_per_hour", "peak_hour_share",
                "peak_factor", "prompt_tokens", "output_tokens", "profile", "images_per_request", "image_size"})
    side = keys.count("image_size", None, minimum=1, maximum=100_000)
    factor = keys.number("peak_factor", 1.0, minimum=1.0, maximum=1000.0)
    prompt, prompt_p95 = _tokens(keys, "prompt_tokens", 512)
    output, output_p95 = _tokens(keys, "output_tokens", 256)
    share = keys.number("peak_hour_share", None, minimum=0.0, strict=True, maximum=1.0)
    profile = keys.data.get("profile")
    if profile is not None:
        if not (isinstance(profile, list) and len(profile) == 24):
            raise ConfigError("scenario key 'traffic.profile': expected 24 non-negative hourly weights")
        weights = [check_number(v, what=f"scenario key 'traffic.profile[{i}]'", minimum=0.0, maximum=1e15)
                   for i, v in enumerate(profile)]
        if sum(weights) <= 0:
            raise ConfigError("scenario key 'traffic.profile': expected 24 non-negative hourly weights, not all 0")
        share = max(weights) / sum(weights)
    share = share or DEFAULT_PEAK_HOUR_SHARE
    per_day = keys.number("requests_per_day", None, minimum=0.0, strict=True, maximum=MAX_REQUESTS_PER_S * 86400)
    peak = keys.number("peak_requests_per_s", None, minimum=0.0, strict=True, maximum=MAX_REQUESTS_PER_S)
    users = keys.number("users", None, minimum=1.0, maximum=MAX_USERS)
    if per_day is None and peak is None and users is None:
        raise ConfigError("scenario key 'traffic' needs requests_per_day, peak_requests_per_s or users")
    if users is not None and per_day is None and peak is None:
        per_hour = keys.number("requests_per_user_per_hour", 20.0, minimum=0.0, strict=True, maximum=3600.0 * 100)
        peak = users * per_hour / 3600  # all users active in the busiest hour
        base = peak * 0.25
        text = f"{users:,.0f} users × {per_hour:g} requests/hour at the peak"
        counted = {"users": users, "requests_per_user_per_hour": per_hour}
    elif per_day is not None:
        base = per_day / 86400
        counted = {} if peak else {"requests_per_day": per_day, "peak_hour_share": share}
        peak = peak or per_day * share / 3600
        text = f"{per_day:,.0f} requests/day, {share:.0%} in the busiest hour"
    else:
        base = peak / 3
        text = f"{peak:g} requests/s at the peak"
        counted = {}
    return Traffic(peak_requests_per_s=peak * factor, base_requests_per_s=base, prompt_tokens=prompt,
                   output_tokens=output, prompt_p95_tokens=prompt_p95, output_p95_tokens=output_p95,
                   peak_factor=factor, description=text + (f", ×{factor:g} for events" if factor > 1 else ""),
                   images=keys.count("images_per_request", 0, minimum=0, maximum=10_000),
                   image_hw=(side, side) if side else None, **counted)


def _sla(keys: _Keys) -> SLA:
    allowed = {f"{m}_{p}_s" for m in METRICS for p in PERCENTILES}
    keys.allow(allowed)
    targets = {}
    for key in keys.data:
        targets[key.removesuffix("_s")] = keys.number(key, minimum=0.0, strict=True, maximum=MAX_SLA_S)
    return SLA(targets=targets)


def parse_scenario(data: Any, source: str = "scenario") -> Scenario:
    """A scenario from its YAML mapping; errors name the offending key."""
    root = _Keys(data, "")
    root.allow({"name", "model", "task", "traffic", "sla", "job", "budget", "constraints", "edge", "input_shape",
                "runtime"})
    task = root.text("task", "api", TASKS)
    model = root.text("model")
    if not model:
        raise ConfigError("scenario key 'model' is missing")
    traffic = _traffic(root.sub("traffic")) if task in SERVING_TASKS else None
    job = None
    if task in ("finetune", "pretrain", "batch"):
        j = root.sub("job")
        j.allow({"method", "tokens", "epochs", "dataset_tokens", "seq", "deadline_hours", "rank", "global_batch"})
        tokens = j.number("tokens", None, minimum=0.0, strict=True, maximum=MAX_TRAINING_TOKENS)
        if tokens is None:
            epochs = j.number("epochs", None, minimum=0.0, strict=True, maximum=MAX_EPOCHS)
            dataset = j.number("dataset_tokens", None, minimum=0.0, strict=True, maximum=MAX_TRAINING_TOKENS)
            if epochs is None or dataset is None:
                raise ConfigError("scenario key 'job' needs tokens, or epochs and dataset_tokens")
            tokens = epochs * dataset
            if tokens > MAX_TRAINING_TOKENS:
                raise ConfigError(f"scenario keys 'job.epochs' x 'job.dataset_tokens' = {tokens:.3g} tokens: expected "
                                  f"at most {MAX_TRAINING_TOKENS:.0e}".replace("e+", "e"))
        if tokens < 1:
            raise ConfigError(f"scenario key 'job.tokens' = {tokens:g}: expected at least 1 token")
        job = Job(method=j.text("method", "full" if task == "pretrain" else "lora",
                                ("full", "lora", "qlora", "freeze", "dora")),
                  tokens=int(tokens), seq=j.count("seq", 2048, maximum=MAX_TOKENS),
                  deadline_hours=j.number("deadline_hours", None, minimum=0.0, strict=True,
                                          maximum=MAX_DEADLINE_HOURS),
                  rank=j.count("rank", 16, maximum=MAX_RANK),
                  global_batch=j.count("global_batch", None, maximum=MAX_BATCH))
    b = root.sub("budget")
    b.allow({"monthly_usd", "job_usd", "pricing"})
    c = root.sub("constraints")
    c.allow({"devices", "providers", "regions", "spot", "engines", "quantizations", "max_gpus", "owned", "headroom",
             "redundancy"})
    owned = []
    items = c.data.get("owned") or []
    if not isinstance(items, list):
        raise ConfigError(f"scenario key 'constraints.owned': expected a list of mappings, got {_type_name(items)}")
    if len(items) > MAX_OWNED:
        raise ConfigError(f"scenario key 'constraints.owned': {len(items):,} entries; expected at most {MAX_OWNED}")
    for i, item in enumerate(items):
        o = _Keys(item, f"constraints.owned[{i}]")
        o.allow({"device", "count", "purchase_usd", "amortize_months", "power_usd_per_kwh"})
        device = o.text("device", limit=MAX_NAME_CHARS)
        if not device:
            raise ConfigError(f"scenario key 'constraints.owned[{i}].device' is missing")
        owned.append(Owned(device=device, count=o.count("count", 1, maximum=MAX_GPUS),
                           purchase_usd=o.number("purchase_usd", required=True, maximum=MAX_USD),
                           amortize_months=o.number("amortize_months", 36, minimum=1, maximum=1200.0),
                           power_usd_per_kwh=o.number("power_usd_per_kwh", 0.15, maximum=100.0)))
    constraints = Constraints(
        devices=c.strings("devices"), providers=c.strings("providers"), regions=c.strings("regions"),
        spot=c.flag("spot", False), engines=check_engines(c.strings("engines"), "scenario key 'constraints.engines'"),
        quantizations=c.strings("quantizations") or ("bf16", "fp8", "awq-int4"),
        max_gpus=c.count("max_gpus", 8, maximum=MAX_GPUS), owned=tuple(owned),
        headroom=c.number("headroom", 0.2, minimum=0.0, below=1.0),
        redundancy=c.flag("redundancy", True) if "redundancy" in (c.data or {}) else None)
    edge = None
    if task == "edge":
        e = root.sub("edge")
        e.allow({"device", "latency_s", "thermal_derate", "price_usd"})
        device = e.text("device", limit=MAX_NAME_CHARS)
        if not device:
            raise ConfigError("scenario key 'edge.device' is missing")
        edge = Edge(device=device, latency_s=e.number("latency_s", required=True, minimum=0.0, strict=True,
                                                      maximum=MAX_SLA_S),
                    thermal_derate=e.number("thermal_derate", 0.8, minimum=0.0, strict=True, maximum=1.0),
                    price_usd=e.number("price_usd", None, maximum=MAX_USD))
    return Scenario(name=root.text("name", Path(source).stem if source else "scenario"), model=model, task=task,
                    traffic=traffic, sla=_sla(root.sub("sla")), job=job,
                    budget=Budget(monthly_usd=b.number("monthly_usd", maximum=MAX_USD),
                                  job_usd=b.number("job_usd", maximum=MAX_USD),
                                  pricing=b.text("pricing", None, ("on-demand", "reserved-1y", "spot"))),
                    constraints=constraints, edge=edge, input_shape=root.text("input_shape"),
                    runtime=root.text("runtime", limit=MAX_NAME_CHARS), source=source)


def load_scenario(path: str | Path) -> Scenario:
    """A scenario from a YAML file: at most MAX_SCENARIO_BYTES, UTF-8 (a BOM is accepted), no binary
    bytes, nested at most MAX_NESTING deep — each checked before the YAML is parsed."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"scenario file {str(path)!r} does not exist")
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_SCENARIO_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"scenario file {str(path)!r}: cannot read it ({e.strerror})") from None
    if len(raw) > MAX_SCENARIO_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_SCENARIO_BYTES // KIB:,} KiB; a scenario is a short YAML file")
    text = _decode(raw, path)
    depth = yaml_nesting_bound(text)
    if depth > MAX_NESTING:
        raise ConfigError(f"{path}: YAML nested up to {depth} levels deep; expected at most {MAX_NESTING}")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(text, Loader=loader)  # noqa: S506 — a safe loader
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise ConfigError(f"{path}: not valid YAML{f' (line {mark.line + 1})' if mark else ''}") from None
    except (ValueError, TypeError, OverflowError, RecursionError) as e:  # e.g. a date 2024-13-45, a 5000-digit int
        raise ConfigError(f"{path}: not valid YAML ({type(e).__name__}: {str(e)[:120]})") from None
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
