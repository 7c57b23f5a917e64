"""The charts of a plan result: cost against latency (every option labelled, the choice marked, the SLA
line), memory per GPU stacked by part, latency against batch (serving) or cost by pricing basis /
fine-tuning method, and the roofline of the chosen configuration.

The roofline prices the chosen configuration's ops again (numpy, imported only there): the plan keeps
totals, not the per-op table."""

from __future__ import annotations

import re
from collections.abc import Sequence

from sizeup.errors import SizeupError
from sizeup.report.charts.svg import (Chart, Point, bars_svg, latency_axis, line_svg, memory_stack_svg, note_svg,
                                      roofline_svg, scatter_svg)

__all__ = ["plan_charts", "roofline_data"]

_PRICED = re.compile(r"\$([\d,]+(?:\.\d+)?)(?:/month)?")
MAX_REJECTED_NOTES = 6


def roofline_data(priced) -> tuple[list[tuple[str, float, float]], float, dict[str, float]]:
    """Points, bandwidth and peaks of a priced ledger (`price.roofline.price`): each op with FLOPs and
    bytes at its intensity and its typical attained FLOP/s."""
    arrays, device = priced.arrays, priced.device
    flops = arrays.tensor_flops + arrays.vector_flops
    time = priced.time["typical"]
    kinds = [o.kind.value for o in arrays.ledger.ops]
    ops = [(kinds[i], float(flops[i] / arrays.bytes[i]), float(flops[i] / time[i]))
           for i in range(len(kinds)) if flops[i] > 0 and arrays.bytes[i] > 0 and time[i] > 0]
    peaks = {**{f"vector {k}": v for k, v in device.vector_flops_per_s.items()},
             **{f"tensor {k}": v for k, v in device.peak_flops_per_s.items()}}
    return ops, device.memory_bandwidth_bytes_per_s, peaks


def _short(label: str) -> str:
    return label.split(" (")[0]


def _latency_key(keys: Sequence[str]) -> str | None:
    for prefix in ("ttft", "e2e", "latency", "tpot", "hours"):
        for k in keys:
            if k.startswith(prefix):
                return k
    return keys[0] if keys else None


def _cost_chart(result) -> Chart | None:
    chosen = result.chosen
    options = list(result.ranked) + ([result.closest] if result.closest is not None else [])
    key = _latency_key(list(options[0].latency)) if options else None
    if key is None:
        return None
    label, factor = latency_axis(key)
    metric = label.split(" (")[0]
    seen, points = set(), []
    for c in options:
        if c.label in seen or key not in c.latency:
            continue
        seen.add(c.label)
        kind = "chosen" if c is chosen else ("rejected" if c is result.closest else "option")
        points.append(Point(_short(c.label) + (" (misses)" if kind == "rejected" else ""),
                            c.latency[key] * factor, c.cost_usd, kind))
    job = key == "hours"
    target = result.scenario.sla.targets.get(key)
    if job and result.scenario.job is not None:
        target = result.scenario.job.deadline_hours
    unit = "h" if job else "ms"
    sla = None if target is None else (target * factor, ("deadline" if job else f"SLA {metric}") +
                                       f" {target * factor:g} {unit}")
    priced = [(r.family, float(m.group(1).replace(",", "")), "at least" in r.reason) for r in result.rejected
              if (m := _PRICED.search(r.reason)) and r.family not in seen]
    priced.sort(key=lambda t: t[1])
    notes = []
    if priced:
        notes.append("rejected on cost (latency not simulated):")
        notes += [f"{family}: {'≥ ' if bound else ''}${cost:,.0f}" for family, cost, bound in priced[:MAX_REJECTED_NOTES]]
        if len(priced) > MAX_REJECTED_NOTES:
            notes.append(f"+{len(priced) - MAX_REJECTED_NOTES} more in the sheet")
    notes.append("cost: the cheapest allowed pricing" + (" per job" if job else " per month"))
    y_label = "cost per job (USD)" if job else "monthly cost (USD)"
    title = "cost against job time" if job else f"cost against {metric}"
    return Chart("cost_vs_latency", title,
                 scatter_svg(points, label, y_label, title, sla, key="cost_vs_latency", notes=notes))


def _memory_chart(c) -> Chart | None:
    if not c.memory_bytes or not c.usable_bytes:
        return None
    parts = c.detail.get("memory_parts") or {"needed (split not known)": c.memory_bytes}
    title = f"memory per GPU: {_short(c.label)}"
    return Chart("memory", title, memory_stack_svg(parts, c.usable_bytes, title))


def _batch_chart(result, c) -> Chart | None:
    batches, steps = c.detail.get("decode_batches"), c.detail.get("decode_step_s")
    if not batches or not steps or len(batches) < 2:
        return None
    pts = [(float(b), s * 1e3) for b, s in zip(batches, steps)]
    target = next(((k, v) for k, v in result.scenario.sla.targets.items() if k.startswith("tpot")), None)
    sla = None if target is None else (target[1] * 1e3, f"SLA {target[0].replace('_', ' ')} {target[1] * 1e3:g} ms")
    mark = None
    if c.max_batch:
        at = min(pts, key=lambda p: abs(p[0] - c.max_batch))
        mark = (at[0], at[1], f"chosen batch {c.max_batch}")
    title = "decode step time against batch"
    return Chart("latency_vs_batch", title,
                 line_svg({"TPOT (decode step)": pts}, "concurrent sequences (log scale)", "TPOT (ms per token)",
                          title, sla, mark, log_x=True, key="latency_vs_batch"))


def _pricing_chart(result, c) -> Chart | None:
    """The chosen fleet's monthly cost on each pricing basis, the one the plan used marked."""
    m = c.monthly
    if m is None:
        return None
    values = {"on-demand": m.on_demand_usd, "reserved 1 year": m.reserved_usd, "spot": m.spot_usd,
              "owned": m.owned_usd}
    values = {k: v for k, v in values.items() if v is not None}
    used = next((k for k, v in values.items() if abs(v - c.cost_usd) < 0.005), None)
    budget = result.scenario.budget.monthly_usd
    line = None if budget is None else (budget, f"budget ${budget:,.0f}/month")
    title = f"monthly cost by pricing basis: {m.instances} instance(s)"
    return Chart("cost_by_basis", title, bars_svg(values, "monthly cost (USD)", title, used, line, key="cost_by_basis"))


def _method_chart(result) -> Chart | None:
    if not result.method_comparison:
        return None
    values = {f"{method} ({_short(config)})": cost for method, config, _, cost in result.method_comparison}
    chosen = next((k for k in values if result.chosen and _short(result.chosen.label) in k), None)
    budget = result.scenario.budget.job_usd
    line = None if budget is None else (budget, f"budget ${budget:,.0f}/job")
    title = "cost per job by fine-tuning method"
    return Chart("cost_by_method", title, bars_svg(values, "cost per job (USD)", title, chosen, line,
                                                   key="cost_by_method"))


def _ledger(result, c):
    """The ops of the chosen configuration: a vision model's traced request, a training forward step
    at the micro-batch, or a serving decode step at the batch the plan runs."""
    scenario = result.scenario
    if result.arch is None:
        from sizeup.plan.vision import vision_ledger

        return vision_ledger(scenario, c.quant), "one request"
    from sizeup.ingest.transformer_ops import Step, transformer_ledger

    if c.engine == "train":
        seq, micro = scenario.job.seq, max(int(c.detail.get("micro_batch") or 1), 1)
        step = Step(batch=micro, new_tokens=seq, context=seq, logits="all")
        return transformer_ledger(result.arch, step, weights=c.quant, tp=c.gpus, per_layer=False), \
            f"forward step, micro-batch {micro} x {seq} tokens"
    from sizeup.workload.towers import decoder_arch, decoder_cache_tokens

    traffic, batch = scenario.traffic, max(c.max_batch, 1)
    arch, context = result.arch, c.detail.get("context")  # edge: its own lengths
    if traffic is not None:  # the decoder as it runs: T5's cross-attention over the prompt, its cache its own tokens
        prompt = traffic.prompt_tokens
        arch = decoder_arch(result.arch, prompt)
        context = context or decoder_cache_tokens(result.arch, prompt, prompt + traffic.output_tokens)
    step = Step(batch=batch, new_tokens=1, context=max(context, 1))
    return transformer_ledger(arch, step, weights=c.quant, tp=c.gpus, per_layer=False), \
        f"decode step at batch {batch}"


def _roofline_chart(result, c) -> Chart:
    from sizeup.price.roofline import LedgerArrays, price

    try:
        ledger, what = _ledger(result, c)
        runtime = None
        if result.arch is None:  # a vision request runs on its scenario's runtime: the per-op overhead is a bound
            from sizeup.engines.defaults import default_runtime
            from sizeup.engines.runtimes import get_runtime

            runtime = get_runtime(result.scenario.runtime or default_runtime())
        ops, bandwidth, peaks = roofline_data(price(LedgerArrays.from_ledger(ledger), c.device, runtime=runtime))
    except (SizeupError, ValueError) as e:  # the sheet stands without it; say why
        return Chart("roofline", "roofline not drawn", note_svg(f"roofline not drawn: {e}"))
    title = f"roofline: {what} on {c.device.id}"
    return Chart("roofline", title, roofline_svg(ops, bandwidth, peaks, title))


def plan_charts(result) -> list[Chart]:
    """The charts of a plan result, each only where the plan has its data: cost_vs_latency, memory,
    latency_vs_batch, cost_by_basis, cost_by_method, roofline (keys, in this order)."""
    charts = [_cost_chart(result)]
    c = result.chosen or result.closest
    if c is not None:
        charts += [_memory_chart(c), _batch_chart(result, c), _pricing_chart(result, c)]
    charts.append(_method_chart(result))
    if c is not None:
        charts.append(_roofline_chart(result, c))
    return [ch for ch in charts if ch is not None]
