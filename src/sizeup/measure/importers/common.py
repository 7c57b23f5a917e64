"""What the readers share: the serving point, percentiles in seconds from each tool's units and names, and how
an imported result becomes a stored run."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from sizeup.errors import ConfigError

__all__ = ["ServingPoint", "ImportedResult", "percentiles", "number", "little_concurrency", "record_run"]

UNIT_SECONDS = {"s": 1.0, "sec": 1.0, "seconds": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_KEYS = {"p50": "p50", "median": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "p999": "p999", "p99.9": "p999",
         "mean": "mean", "avg": "mean", "min": "min", "max": "max"}


def number(value: object) -> float | None:
    """A finite number, or None (a missing or non-numeric field, NaN, infinity)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def percentiles(block: object, scale: float) -> dict[str, float]:
    """{p50, p90, p95, p99, p999, mean, min, max} in seconds from a block of a tool's percentile names
    (median, avg, p99.9…; nested "percentiles" too), each value multiplied by `scale` (1e-3 for ms)."""
    out: dict[str, float] = {}
    if not isinstance(block, dict):
        return out
    flat = dict(block)
    if isinstance(block.get("percentiles"), dict):
        flat = {**block["percentiles"], **{k: v for k, v in block.items() if k != "percentiles"}}
    for key, value in flat.items():
        name = _KEYS.get(str(key))
        v = number(value)
        if name is not None and v is not None and v >= 0 and name not in out:
            out[name] = v * scale
    return out


def little_concurrency(requests_per_s: float | None, e2e_mean_s: float | None) -> float | None:
    """Requests in flight on average by Little's law (arrival rate x time in the system), where a file does not
    give its concurrency."""
    if not requests_per_s or not e2e_mean_s:
        return None
    return requests_per_s * e2e_mean_s


@dataclass(frozen=True, slots=True, kw_only=True)
class ServingPoint:
    """One benchmark of a load test: a concurrency or request-rate level and what it measured."""

    concurrency: int
    """Requests in flight: the concurrency the tool held, else estimated (`concurrency_source` says how)."""
    concurrency_source: str
    ttft_s: dict[str, float]
    tpot_s: dict[str, float]
    itl_s: dict[str, float]
    e2e_s: dict[str, float]
    requests: int
    errors: int = 0
    request_rate_per_s: float | None = None
    """The rate the tool targeted (None: as fast as the concurrency allows)."""
    requests_per_s: float | None = None
    output_tokens_per_s: float | None = None
    prompt_tokens: float | None = None
    """Mean prompt and output tokens per request."""
    output_tokens: float | None = None
    label: str = ""

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ConfigError(f"benchmark {self.label!r}: concurrency {self.concurrency} is not >= 1")

    def to_extra(self) -> dict[str, Any]:
        return {"ttft_s": self.ttft_s, "tpot_s": self.tpot_s, "itl_s": self.itl_s, "e2e_s": self.e2e_s,
                "requests": self.requests, "errors": self.errors, "request_rate_per_s": self.request_rate_per_s,
                "token_throughput_per_s": self.output_tokens_per_s, "prompt_tokens": self.prompt_tokens,
                "output_tokens": self.output_tokens, "concurrency_source": self.concurrency_source,
                "label": self.label}


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportedResult:
    source: str
    file: str
    points: tuple[ServingPoint, ...]
    model: str | None = None
    engine: str | None = None
    engine_version: str | None = None
    tool_version: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


def _weighted(points, attr: str) -> float | None:
    values = [(getattr(p, attr), p.requests) for p in points if getattr(p, attr)]
    total = sum(w for _, w in values)
    return sum(v * w for v, w in values) / total if total else None


def record_run(store, result: ImportedResult, *, model: str | None, device_type: str | None, gpus: int,
               engine: str | None, host: str | None, quant: str) -> int:
    import hashlib

    from sizeup import __version__
    from sizeup.measure.provenance import split_engine

    model = model or result.model
    name, version = split_engine(engine) if engine else (result.engine, result.engine_version)
    if device_type is not None:
        from sizeup.hardware.catalog import load_catalog

        device_type = load_catalog().device(device_type).id
    with open(result.file, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()[:16]
    config = {"source": result.source, "file": result.file, "model": model, "gpus": gpus, "quant": quant,
              "prompt_tokens": _weighted(result.points, "prompt_tokens"),
              "output_tokens": _weighted(result.points, "output_tokens"), "imported": True}
    run = store.start_run(kind="load", target=f"{result.source}:{result.file}", device=device_type or "remote",
                          config=config, environment={"tool": result.source, "tool_version": result.tool_version,
                                                      "notes": list(result.notes)},
                          provenance={"host": host, "engine": name, "engine_version": version,
                                      "device_type": device_type, "workload_class": "serving",
                                      "sizeup_version": __version__, "workload_hash": digest})
    for p in result.points:
        store.add_point(run, batch=p.concurrency, phase="e2e", status="ok", throughput_per_s=p.requests_per_s,
                        extra=p.to_extra())
    store.finish_run(run, "ok")
    return run
