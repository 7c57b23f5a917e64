"""AIPerf's `profile_export_aiperf.json` and its predecessor GenAI-Perf's `profile_export_genai_perf.json`.

Format, from ai-dynamo/aiperf `docs/reference/json-export-schema.md` and its test fixtures, and
triton-inference-server/perf_analyzer genai-perf `export_data/json_exporter.py` (read 2026-12-04): one block per
metric tag — "time_to_first_token", "inter_token_latency", "request_latency", "output_token_throughput",
"request_throughput", "input_sequence_length", "output_sequence_length", "request_count" — each {"unit": "ms" |
"requests/sec" | "tokens" …, "avg", "min", "max", "p1" … "p99", "std"}; the run's settings in "input_config":
AIPerf's {"endpoint": {"model_names": [...]}, "loadgen": {"concurrency", "request_rate"}} (newer:
{"models": {"items": [{"name"}]}, "phases": {"profiling": {"concurrency"}}}), GenAI-Perf's command-line
arguments {"model": [...], "concurrency", "request_rate"}. AIPerf's inter-token latency is per request
(request latency less TTFT over the output tokens but one): vLLM's TPOT; it is stored as both TPOT and ITL.
"""

from __future__ import annotations

from pathlib import Path

from sizeup.errors import ConfigError
from sizeup.measure.importers.common import (UNIT_SECONDS, ImportedResult, ServingPoint, little_concurrency, number,
                                             percentiles)

__all__ = ["read"]


def _seconds(block: object) -> dict[str, float]:
    if not isinstance(block, dict):
        return {}
    unit = str(block.get("unit", "ms")).strip().lower()
    if unit not in UNIT_SECONDS:
        raise ConfigError(f"latency unit {unit!r}: expected one of {', '.join(UNIT_SECONDS)}")
    return percentiles(block, UNIT_SECONDS[unit])


def _avg(data: dict, key: str) -> float | None:
    block = data.get(key)
    return number(block.get("avg")) if isinstance(block, dict) else None


def _first(*values):
    return next((v for v in values if v is not None), None)


def _dig(data: object, *keys):
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def read(data: dict, path: Path) -> ImportedResult:
    config = data.get("input_config") if isinstance(data.get("input_config"), dict) else {}
    genai = "aiperf_version" not in data and "endpoint" not in config and "models" not in config
    names = _first(_dig(config, "endpoint", "model_names"), config.get("model"), config.get("model_names"))
    items = _dig(config, "models", "items")
    if isinstance(items, list) and items and isinstance(items[0], dict):
        names = names or [items[0].get("name")]
    model = names[0] if isinstance(names, list) and names and isinstance(names[0], str) else \
        names if isinstance(names, str) else None
    concurrency = number(_first(_dig(config, "loadgen", "concurrency"), _dig(config, "phases", "profiling",
                                                                            "concurrency"), config.get("concurrency")))
    rate = number(_first(_dig(config, "loadgen", "request_rate"), config.get("request_rate")))
    e2e = _seconds(data.get("request_latency"))
    requests_per_s = _avg(data, "request_throughput")
    how = "the tool's concurrency setting"
    if not concurrency:
        concurrency, how = little_concurrency(requests_per_s, e2e.get("mean")), "Little's law (rate x mean latency)"
    count = _first(number(_dig(data, "request_latency", "count")), _avg(data, "request_count"),
                   number(_dig(config, "loadgen", "request_count")), number(config.get("request_count")))
    itl = _seconds(data.get("inter_token_latency"))
    notes = ["inter-token latency is per request here (vLLM's TPOT): stored as TPOT and as ITL"]
    points = ()
    if concurrency and count != 0 and (e2e or itl):
        count = count or 0
        points = (ServingPoint(concurrency=max(1, round(concurrency)), concurrency_source=how,
                               ttft_s=_seconds(data.get("time_to_first_token")), tpot_s=itl, itl_s=itl, e2e_s=e2e,
                               requests=int(count), request_rate_per_s=rate, requests_per_s=requests_per_s,
                               output_tokens_per_s=_avg(data, "output_token_throughput"),
                               prompt_tokens=_avg(data, "input_sequence_length"),
                               output_tokens=_avg(data, "output_sequence_length"),
                               errors=len(data.get("error_summary") or []), label="profile"),)
    version = data.get("aiperf_version")
    return ImportedResult(source="genai-perf" if genai else "aiperf", file=str(path), points=points, model=model,
                          tool_version=version if isinstance(version, str) else None, notes=tuple(notes))
