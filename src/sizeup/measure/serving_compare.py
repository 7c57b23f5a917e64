"""A serving run (a `sizeup load` test, or an imported GuideLLM / AIPerf / inference-perf / vllm bench result)
beside what was promised for it: the SLA of the plan's scenario, percentile by percentile (met or missed), and
sizeup's own prediction for the same model, device, engine, concurrency and token lengths (typical and high of
its range) beside the measured median and tail. Pure functions over plain data; the CLI prices the prediction
(`sizeup.api.estimate`) and hands it in."""

from __future__ import annotations

from typing import Any

__all__ = ["METRICS", "sla_rows", "serving_points", "prediction_rows"]

METRICS = ("ttft", "tpot", "itl", "e2e")
PERCENTILES = ("p50", "p90", "p95", "p99", "p999")


def sla_rows(promised: dict[str, float], measured: dict) -> dict[str, dict]:
    """{target: {promised_s, measured_s, met}} for SLA targets like ttft_p95 against measured percentiles
    ({"ttft_s": {"p95": …}, …}); a percentile not measured is None and not met."""
    rows = {}
    for key, value in promised.items():
        metric, _, point = key.partition("_")
        got = (measured.get(f"{metric}_s") or {}).get(point)
        rows[key] = {"promised_s": value, "measured_s": got, "met": got is not None and got <= value}
    return rows


def serving_points(run) -> list[dict[str, Any]]:
    """Each ok point of a serving run: its concurrency and measured percentiles (seconds) per metric; a run
    stored before end-to-end percentiles were kept gets them from its repetition times."""
    out = []
    for point in run.points:
        if point.status != "ok":
            continue
        measured = {f"{m}_s": dict(point.extra.get(f"{m}_s") or {}) for m in METRICS}
        out.append({"concurrency": point.batch or 1, "label": point.extra.get("label") or f"point {point.id}",
                    "requests": point.extra.get("requests"), "requests_per_s": point.throughput_per_s,
                    "output_tokens_per_s": point.extra.get("token_throughput_per_s"), **measured})
    return out


def prediction_rows(measured: dict, predicted: dict[str, dict]) -> list[dict[str, Any]]:
    """Per metric sizeup predicts (ttft, tpot), its range beside the measured median and p99: the error of the
    typical against the median, and whether the measured p99 stays under the high end."""
    rows = []
    for metric, rng in predicted.items():
        got = measured.get(f"{metric}_s") or {}
        p50, p99 = got.get("p50"), got.get("p99")
        rows.append({"metric": metric, "predicted_low_s": rng["low"], "predicted_typical_s": rng["typical"],
                     "predicted_high_s": rng["high"], "measured_p50_s": p50, "measured_p99_s": p99,
                     "error_vs_p50": rng["typical"] / p50 - 1 if p50 else None,
                     "p99_within_high": None if p99 is None else p99 <= rng["high"]})
    return rows
