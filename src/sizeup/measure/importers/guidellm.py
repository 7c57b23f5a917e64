"""GuideLLM's report (`guidellm benchmark --output-path benchmarks.json`).

Format, from vllm-project/guidellm `src/guidellm/benchmark/schemas/generative/{report,benchmark,metrics}.py` and
`src/guidellm/schemas/statistics.py` (read 2026-12-04): {"args": {... "model" ...}, "benchmarks": [{"config":
{"strategy": {"type_": "synchronous" | "concurrent" (with "streams") | "throughput" | "constant" | "poisson"
(with "rate")}, ...}, "metrics": {"request_totals": {successful, errored, incomplete, total},
"time_to_first_token_ms" | "time_per_output_token_ms" | "inter_token_latency_ms": StatusDistributionSummary,
"request_latency" (seconds), "requests_per_second", "output_tokens_per_second", "request_concurrency",
"prompt_token_count", "output_token_count"}}]}. A StatusDistributionSummary holds "successful", "errored",
"incomplete", "total", each {mean, median, ..., "percentiles": {p001 ... p50, p90, p95, p99, p999}}. Older
reports kept the strategy under the benchmark's "args"; both are read.
"""

from __future__ import annotations

import math
from pathlib import Path

from sizeup.measure.importers.common import ImportedResult, ServingPoint, number, percentiles

__all__ = ["read"]


def _successful(metrics: dict, key: str, scale: float) -> dict[str, float]:
    block = metrics.get(key)
    return percentiles(block.get("successful") if isinstance(block, dict) else None, scale)


def _mean(metrics: dict, key: str) -> float | None:
    block = metrics.get(key)
    ok = block.get("successful") if isinstance(block, dict) else None
    return number(ok.get("mean")) if isinstance(ok, dict) else None


def _strategy(bench: dict) -> dict:
    for holder in (bench.get("config"), bench.get("args")):
        if isinstance(holder, dict) and isinstance(holder.get("strategy"), dict):
            return holder["strategy"]
    return {}


def read(data: dict, path: Path) -> ImportedResult:
    args = data.get("args") if isinstance(data.get("args"), dict) else {}
    points, notes = [], []
    for i, bench in enumerate(data.get("benchmarks") or []):
        if not isinstance(bench, dict) or not isinstance(bench.get("metrics"), dict):
            continue
        metrics = bench["metrics"]
        totals = metrics.get("request_totals") if isinstance(metrics.get("request_totals"), dict) else {}
        ok = int(number(totals.get("successful")) or 0)
        if not ok:
            notes.append(f"benchmark {i}: no successful request, left out")
            continue
        strategy = _strategy(bench)
        kind = str(strategy.get("type_", ""))
        streams = number(strategy.get("streams"))
        measured = _mean(metrics, "request_concurrency")
        if kind == "synchronous":
            concurrency, how = 1, "synchronous strategy"
        elif streams:
            concurrency, how = int(streams), f"{kind} strategy with {int(streams)} streams"
        elif measured:
            concurrency, how = max(1, math.ceil(measured - 1e-9)), f"mean measured concurrency {measured:.2f}"
        else:
            notes.append(f"benchmark {i}: no concurrency recorded, left out")
            continue
        label = f"{kind or 'benchmark'} {i}" + (f" @ {number(strategy.get('rate')):g} req/s"
                                                if number(strategy.get("rate")) else "")
        points.append(ServingPoint(
            concurrency=concurrency, concurrency_source=how, label=label,
            ttft_s=_successful(metrics, "time_to_first_token_ms", 1e-3),
            tpot_s=_successful(metrics, "time_per_output_token_ms", 1e-3),
            itl_s=_successful(metrics, "inter_token_latency_ms", 1e-3),
            e2e_s=_successful(metrics, "request_latency", 1.0), requests=ok,
            errors=int(number(totals.get("errored")) or 0), request_rate_per_s=number(strategy.get("rate")),
            requests_per_s=_mean(metrics, "requests_per_second"),
            output_tokens_per_s=_mean(metrics, "output_tokens_per_second"),
            prompt_tokens=_mean(metrics, "prompt_token_count"), output_tokens=_mean(metrics, "output_token_count")))
    model = args.get("model") if isinstance(args.get("model"), str) else None
    backend = args.get("backend") or args.get("backend_type")
    return ImportedResult(source="guidellm", file=str(path), points=tuple(points), model=model,
                          notes=tuple(notes) + ((f"GuideLLM backend {backend} (the client, not the engine)",)
                                                if isinstance(backend, str) else ()))
