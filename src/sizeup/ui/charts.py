"""The UI's charts: each from a result's JSON data, drawn by `sizeup.report.charts` (hand-written SVG; no
scripts, every label escaped). The UI computes nothing here: it picks the figures a result already holds."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["compare_chart", "estimate_memory_chart", "roofline_chart", "run_chart", "train_charts"]


def estimate_memory_chart(result: dict | None) -> str:
    """The estimate's memory per GPU stacked by part against the usable memory (overflowing when it does not fit)."""
    from sizeup.report.charts import memory_stack_svg

    if not result:
        return ""
    m = result["memory"]
    parts = {"weights": m["weights_bytes"], "KV cache": m["kv_cache_bytes"], "activations": m["activations_bytes"],
             **({"multimodal profile": m["multimodal_profile_bytes"]} if m.get("multimodal_profile_bytes") else {}),
             "engine overhead": m["overhead_bytes"]}
    return memory_stack_svg(parts, m["usable_bytes"], f"memory per GPU: {result['device']['name']}", key="memory")


def train_charts(data: dict | None) -> dict[str, str]:
    """One method: memory per GPU by part against usable, and the step's time by part. Several methods: memory
    per GPU of each against usable."""
    from sizeup.report.charts import bars_svg, memory_stack_svg

    if not data:
        return {}
    if "methods" in data:
        rows = [r for r in data["methods"] if r.get("memory_per_gpu_bytes")]
        if not rows:
            return {}
        usable = data["methods"][0].get("usable_bytes")
        values = {r["method"]: r["memory_per_gpu_bytes"] / 2**30 for r in rows}
        line = (usable / 2**30, f"usable {usable / 2**30:,.1f} GiB") if usable else None
        return {"methods": bars_svg(values, "memory per GPU (GiB)", f"memory per GPU on {data['device']}",
                                    line=line, key="methods")}
    m = data["memory"]["per_gpu"]
    parts = {"weights": m["weights_bytes"], "gradients": m["gradients_bytes"], "optimizer state": m["optimizer_bytes"],
             "activations": m["activations_bytes"], "allocator and overhead": m["overhead_bytes"]}
    charts = {"memory": memory_stack_svg({k: v for k, v in parts.items() if v}, m["usable_bytes"],
                                         f"memory per GPU: {data['device']['name']}", key="train-memory")}
    breakdown = {k.replace("_", " "): v * 1e3 for k, v in (data["step"].get("breakdown_s") or {}).items() if v and v > 0}
    if breakdown:
        charts["time"] = bars_svg(breakdown, "milliseconds per optimizer step (typical)",
                                  "time of one step, by part", key="train-time")
    return charts


def compare_chart(data: dict | None, labelled: Sequence[str] = ()) -> str:
    """Decode tokens/s against $ per million output tokens for the devices that have both; the cheapest per
    million tokens ringed. Only the devices in `labelled` (the page shown) and the cheapest carry their name."""
    from sizeup.report.charts import Point, scatter_svg

    rows = [r for r in (data or {}).get("devices", []) if r.get("tokens_per_s") and r.get("usd_per_million_tokens")]
    if not rows:
        return ""
    cheapest = min(rows, key=lambda r: r["usd_per_million_tokens"])
    shown = set(labelled)
    points = [Point(r["device"] if r is cheapest or r["device"] in shown else "", r["usd_per_million_tokens"],
                    r["tokens_per_s"], "chosen" if r is cheapest else "option") for r in rows]
    return scatter_svg(points, "$ per million output tokens (log)", "decode tokens/s",
                       f"{data['model']}: speed against cost", key="compare", log_x=True,
                       legend={"chosen": "cheapest per million tokens", "option": "another device (fits, priced)"},
                       notes=[f"{len(rows)} devices with a price; names shown for this page's rows"])


def run_chart(record: dict | None, terms: dict | None) -> str:
    """Measured against predicted per batch size: a model run's latency (median, fastest) beside sizeup's
    prediction; a serving run's TTFT median against the predicted typical."""
    from sizeup.report.charts import line_svg

    if not terms or not terms.get("points"):
        return ""
    pts = terms["points"]
    if "concurrency" in pts[0]:  # a serving run
        series: dict[str, list[tuple[float, float]]] = {"measured TTFT p50": [], "predicted TTFT": []}
        for p in pts:
            got = (p.get("ttft_s") or {}).get("p50")
            pred = next((r for r in p.get("predicted") or [] if r["metric"] == "ttft"), None)
            if got is not None:
                series["measured TTFT p50"].append((p["concurrency"], got * 1e3))
            if pred is not None:
                series["predicted TTFT"].append((p["concurrency"], pred["predicted_typical_s"] * 1e3))
        series = {k: v for k, v in series.items() if v}
        return line_svg(series, "concurrent requests", "milliseconds", "TTFT: measured and predicted",
                        key="run") if series else ""
    series = {"measured (median)": [], "measured (fastest)": [], "predicted": []}
    for p in pts:
        batch = p.get("batch")
        if batch is None:
            continue
        for name, key in (("measured (median)", "measured_s"), ("measured (fastest)", "measured_min_s"),
                          ("predicted", "predicted_s")):
            if p.get(key) is not None:
                series[name].append((batch, p[key] * 1e3))
    series = {k: sorted(v) for k, v in series.items() if v}
    if not series:
        return ""
    phase = {p.get("phase") for p in pts if p.get("phase")}
    what = f" ({', '.join(sorted(phase))})" if phase else ""
    return line_svg(series, "batch size", "milliseconds per step", f"latency{what}: measured and predicted",
                    key="run")


def roofline_chart(view: dict | None) -> str:
    from sizeup.report.charts import roofline_svg

    if not view:
        return ""
    r = view["roofline"]
    ops = [tuple(o) for o in r["ops"]]
    title = f"roofline of {view['report']['model']} on {view['priced']['device_name']}"
    return roofline_svg(ops, r["bandwidth_bytes_per_s"], r["peaks"], title) if ops else ""

