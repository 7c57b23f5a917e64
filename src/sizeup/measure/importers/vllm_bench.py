"""`vllm bench serve --save-result` (one JSON object; one per line with `--append-result`).

Format, from vllm-project/vllm `vllm/benchmarks/serve.py` (`main_async` and `benchmark`, read 2026-12-04):
"backend", "model_id", "num_prompts", "request_rate" (a number or "inf"), "max_concurrency" (null without
--max-concurrency), "completed", "failed", "total_input_tokens", "total_output_tokens", "request_throughput",
"output_throughput", and per metric (ttft, tpot, itl, e2el; those --percentile-metrics selected, TTFT/TPOT/ITL
by default) "mean_<m>_ms", "median_<m>_ms", "std_<m>_ms" and "p<P>_<m>_ms" for each --metric-percentiles (99 by
default). The vLLM version is not in the file: give --engine vllm@VERSION.
"""

from __future__ import annotations

from pathlib import Path

from sizeup.measure.importers.common import ImportedResult, ServingPoint, little_concurrency, number

__all__ = ["read"]


def _metric(row: dict, name: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in row.items():
        if not key.endswith(f"_{name}_ms"):
            continue
        stat = key[: -len(f"_{name}_ms")]
        v = number(value)
        if v is None or v < 0:
            continue
        label = {"mean": "mean", "median": "p50"}.get(stat)
        if label is None and stat.startswith("p"):
            label = "p999" if stat == "p99.9" else stat if stat in ("p50", "p90", "p95", "p99") else None
        if label is not None and label not in out:
            out[label] = v * 1e-3
    return out


def _point(row: dict, index: int) -> ServingPoint | None:
    completed = int(number(row.get("completed")) or 0)
    if not completed:
        return None
    e2e = _metric(row, "e2el")
    rate = number(row.get("request_rate"))
    concurrency, how = number(row.get("max_concurrency")), "--max-concurrency"
    output = (number(row.get("total_output_tokens")) or 0) / completed
    if not concurrency:
        mean_e2e = e2e.get("mean")
        ttft, tpot = _metric(row, "ttft").get("mean"), _metric(row, "tpot").get("mean")
        if mean_e2e is None and ttft is not None and tpot is not None and output:
            mean_e2e = ttft + tpot * max(output - 1, 0)  # E2EL not selected: TTFT and the decode of the rest
        concurrency = little_concurrency(number(row.get("request_throughput")), mean_e2e)
        how = "Little's law (rate x mean latency)"
    if not concurrency:
        concurrency = number(row.get("max_concurrent_requests"))
        how = "the peak concurrent requests vLLM reported"
    if not concurrency:
        return None
    label = f"run {index}" + (f" @ {rate:g} req/s" if rate else "") + \
        (f", concurrency {int(number(row['max_concurrency']))}" if number(row.get("max_concurrency")) else "")
    return ServingPoint(concurrency=max(1, round(concurrency)), concurrency_source=how, label=label,
                        ttft_s=_metric(row, "ttft"), tpot_s=_metric(row, "tpot"), itl_s=_metric(row, "itl"),
                        e2e_s=e2e, requests=completed, errors=int(number(row.get("failed")) or 0),
                        request_rate_per_s=rate, requests_per_s=number(row.get("request_throughput")),
                        output_tokens_per_s=number(row.get("output_throughput")),
                        prompt_tokens=(number(row.get("total_input_tokens")) or 0) / completed or None,
                        output_tokens=output or None)


def read(data: dict | list, path: Path) -> ImportedResult:
    rows = data if isinstance(data, list) else [data]
    points = tuple(p for i, row in enumerate(rows) if isinstance(row, dict) for p in [_point(row, i)] if p)
    first = rows[0] if rows and isinstance(rows[0], dict) else {}
    model = first.get("model_id") if isinstance(first.get("model_id"), str) else None
    notes = ("vllm bench serve files name no vLLM version: give --engine vllm@VERSION",)
    return ImportedResult(source="vllm-bench", file=str(path), points=points, model=model, engine="vllm",
                          notes=notes)
