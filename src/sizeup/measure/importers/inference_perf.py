"""inference-perf's lifecycle reports (`summary_lifecycle_metrics.json`, `stage_N_lifecycle_metrics.json`).

Format, from kubernetes-sigs/inference-perf `inference_perf/reportgen/base.py` (`summarize_requests`, read
2026-12-04): {"load_summary": {"count", "requested_rate", "achieved_rate", "concurrency"?}, "successes":
{"count", "latency": {"request_latency", "time_to_first_token", "time_per_output_token", "inter_token_latency",
"normalized_time_per_output_token"}, "throughput": {"requests_per_sec", "output_tokens_per_sec", ...},
"prompt_tokens" (or older "prompt_len"), "output_len"}, "failures": {"count"}}; each latency summary {mean, min,
max, median, p90, p99, p99.9 …} in seconds. The model and engine are not in these files: give --model,
--device-type and --engine.
"""

from __future__ import annotations

from pathlib import Path

from sizeup.measure.importers.common import ImportedResult, ServingPoint, little_concurrency, number, percentiles

__all__ = ["read"]


def _mean(block: object) -> float | None:
    return number(block.get("mean")) if isinstance(block, dict) else None


def read(data: dict, path: Path) -> ImportedResult:
    load = data.get("load_summary") if isinstance(data.get("load_summary"), dict) else {}
    ok = data.get("successes") if isinstance(data.get("successes"), dict) else {}
    latency = ok.get("latency") if isinstance(ok.get("latency"), dict) else {}
    throughput = ok.get("throughput") if isinstance(ok.get("throughput"), dict) else {}
    failures = data.get("failures") if isinstance(data.get("failures"), dict) else {}
    e2e = percentiles(latency.get("request_latency"), 1.0)
    requests_per_s = number(throughput.get("requests_per_sec"))
    concurrency, how = number(load.get("concurrency")), "the stage's concurrency"
    if not concurrency:
        concurrency, how = little_concurrency(requests_per_s, e2e.get("mean")), "Little's law (rate x mean latency)"
    count = int(number(ok.get("count")) or 0)
    points = ()
    if concurrency and count:
        points = (ServingPoint(
            concurrency=max(1, round(concurrency)), concurrency_source=how, label=path.stem,
            ttft_s=percentiles(latency.get("time_to_first_token"), 1.0),
            tpot_s=percentiles(latency.get("time_per_output_token"), 1.0),
            itl_s=percentiles(latency.get("inter_token_latency"), 1.0), e2e_s=e2e, requests=count,
            errors=int(number(failures.get("count")) or 0), request_rate_per_s=number(load.get("requested_rate")),
            requests_per_s=requests_per_s, output_tokens_per_s=number(throughput.get("output_tokens_per_sec")),
            prompt_tokens=_mean(ok.get("prompt_tokens")) or _mean(ok.get("prompt_len")),
            output_tokens=_mean(ok.get("output_len")) or _mean(ok.get("output_tokens"))),)
    return ImportedResult(source="inference-perf", file=str(path), points=points,
                          notes=("inference-perf files name no model or engine: give --model and --engine",))
