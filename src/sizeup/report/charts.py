"""Charts as hand-written SVG strings: one module for the sheet's HTML, `--plots`, `roofline --plot` and
the web UI.

Pure Python (no matplotlib, no scripts, no external fetches); every piece of text is escaped. The
per-chart functions take plain numbers so any caller can draw them; `plan_charts` reads a plan result.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["Chart", "Point", "plan_charts", "scatter_svg", "line_svg", "memory_stack_svg", "roofline_svg",
           "latency_axis"]

W, H = 640, 400
LEFT, RIGHT, TOP, BOTTOM = 78, 20, 36, 58
COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974")
CHOSEN, SLA_COLOUR, USABLE_COLOUR = "#c93434", "#c93434", "#1d2330"
GIB = 2**30


@dataclass(frozen=True, slots=True)
class Chart:
    key: str
    """File stem and anchor: cost_vs_latency, memory, latency_vs_batch, roofline."""
    title: str
    svg: str


@dataclass(frozen=True, slots=True)
class Point:
    label: str
    x: float
    y: float
    kind: str = "option"
    """"chosen", "option" (meets the scenario) or "rejected"."""


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _num(v: float) -> str:
    """A tick label: short, no float noise."""
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e6 or a < 1e-3:
        return f"{v:.0e}".replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")
    if a >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + i * step, 12) for i in range(int((hi - first) / step + 1e-9) + 1)]


class _Axis:
    """A linear or log10 mapping from data to pixels."""

    def __init__(self, lo: float, hi: float, p0: float, p1: float, log: bool = False):
        self.log = log
        if log:
            lo, hi = max(lo, 1e-30), max(hi, 1e-30)
            lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
            if hi <= lo:
                hi = lo * 10
        elif hi <= lo:
            lo, hi = lo - (abs(lo) or 1.0) * 0.5, hi + (abs(hi) or 1.0) * 0.5
        self.lo, self.hi, self.p0, self.p1 = lo, hi, p0, p1

    def __call__(self, v: float) -> float:
        if self.log:
            v = max(v, 1e-30)
            f = (math.log10(v) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            f = (v - self.lo) / (self.hi - self.lo)
        return self.p0 + f * (self.p1 - self.p0)

    def ticks(self) -> list[float]:
        if self.log:
            a, b = round(math.log10(self.lo)), round(math.log10(self.hi))
            stride = max(1, (b - a) // 6)
            return [10.0 ** k for k in range(a, b + 1, stride)]
        return [t for t in _ticks(self.lo, self.hi) if self.lo - 1e-12 <= t <= self.hi + 1e-12]


def _padded(values: Sequence[float], zero: bool = True) -> tuple[float, float]:
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    if zero:
        lo = min(lo, 0.0)
    span = (hi - lo) or abs(hi) or 1.0
    return (lo if zero and lo == 0 else lo - 0.08 * span), hi + 0.08 * span


def _frame(title: str, x: _Axis, y: _Axis, x_label: str, y_label: str, body: list[str],
           legend: Sequence[tuple[str, str, str]] = (), key: str = "chart") -> str:
    """The whole SVG: title, grid, ticks, axis labels, the body, a legend of (colour, shape, label)."""
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="{_e(key)}" '
           f'viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" aria-label="{_e(title)}" '
           'font-family="system-ui, sans-serif" font-size="11">',
           f"<title>{_e(title)}</title>",
           f'<rect x="0" y="0" width="{W}" height="{H}" fill="#ffffff"/>',
           f'<text x="{W / 2:.1f}" y="20" text-anchor="middle" font-size="14" font-weight="600">{_e(title)}</text>']
    x0, x1, y0, y1 = LEFT, W - RIGHT, H - BOTTOM, TOP
    for t in x.ticks():
        px = x(t)
        out.append(f'<line x1="{px:.1f}" y1="{y1}" x2="{px:.1f}" y2="{y0}" stroke="#e6e8ec"/>')
        out.append(f'<text x="{px:.1f}" y="{y0 + 15}" text-anchor="middle" class="tick">{_e(_num(t))}</text>')
    for t in y.ticks():
        py = y(t)
        out.append(f'<line x1="{x0}" y1="{py:.1f}" x2="{x1}" y2="{py:.1f}" stroke="#e6e8ec"/>')
        out.append(f'<text x="{x0 - 6}" y="{py + 4:.1f}" text-anchor="end" class="tick">{_e(_num(t))}</text>')
    out.append(f'<rect x="{x0}" y="{y1}" width="{x1 - x0}" height="{y0 - y1}" fill="none" stroke="#5b6475"/>')
    out.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{H - 16}" text-anchor="middle" font-size="12" '
               f'class="axis-label">{_e(x_label)}</text>')
    out.append(f'<text transform="translate(16 {(y0 + y1) / 2:.1f}) rotate(-90)" text-anchor="middle" '
               f'font-size="12" class="axis-label">{_e(y_label)}</text>')
    out.extend(body)
    lx, ly = x0 + 10, y1 + 14
    for colour, shape, label in legend:
        if shape == "line":
            out.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 16}" y2="{ly - 4}" stroke="{colour}" '
                       'stroke-width="2" stroke-dasharray="5 3"/>')
        else:
            out.append(f'<rect x="{lx + 4}" y="{ly - 9}" width="9" height="9" fill="{colour}"/>')
        out.append(f'<text x="{lx + 22}" y="{ly}" class="legend">{_e(label)}</text>')
        ly += 15
    out.append("</svg>")
    return "\n".join(out)


def _hline(y: _Axis, value: float, label: str, colour: str = SLA_COLOUR) -> list[str]:
    py = y(value)
    return [f'<line class="sla" data-value="{value:g}" x1="{LEFT}" y1="{py:.1f}" x2="{W - RIGHT}" y2="{py:.1f}" '
            f'stroke="{colour}" stroke-width="1.5" stroke-dasharray="6 4"/>',
            f'<text x="{W - RIGHT - 4}" y="{py - 5:.1f}" text-anchor="end" fill="{colour}">{_e(label)}</text>']


def scatter_svg(points: Sequence[Point], x_label: str, y_label: str, title: str,
                sla: tuple[float, str] | None = None, key: str = "scatter") -> str:
    """Labelled points (the chosen one ringed and named), and an SLA as a vertical dashed line at x."""
    xs = [p.x for p in points] + ([sla[0]] if sla else [])
    ys = [p.y for p in points]
    x, y = _Axis(*_padded(xs), LEFT, W - RIGHT), _Axis(*_padded(ys), H - BOTTOM, TOP)
    body: list[str] = []
    if sla is not None:
        px = x(sla[0])
        body += [f'<line class="sla" data-value="{sla[0]:g}" x1="{px:.1f}" y1="{TOP}" x2="{px:.1f}" '
                 f'y2="{H - BOTTOM}" stroke="{SLA_COLOUR}" stroke-width="1.5" stroke-dasharray="6 4"/>',
                 f'<text x="{px - 4:.1f}" y="{TOP + 12}" text-anchor="end" fill="{SLA_COLOUR}">{_e(sla[1])}</text>']
    order = sorted(points, key=lambda p: p.kind == "chosen")  # the choice drawn last, on top
    for i, p in enumerate(order):
        px, py = x(p.x), y(p.y)
        if p.kind == "chosen":
            body.append(f'<circle class="chosen" cx="{px:.1f}" cy="{py:.1f}" r="8" fill="none" '
                        f'stroke="{CHOSEN}" stroke-width="2.5"/>')
            body.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="4" fill="{CHOSEN}"/>')
        else:
            fill = "#9aa3b2" if p.kind == "rejected" else COLOURS[0]
            body.append(f'<circle class="{_e(p.kind)}" cx="{px:.1f}" cy="{py:.1f}" r="4.5" fill="{fill}" '
                        'fill-opacity="0.85"/>')
        anchor, dx = ("end", -10) if px > W * 0.62 else ("start", 10)
        text = f"{p.label} (chosen)" if p.kind == "chosen" else p.label
        weight = ' font-weight="600"' if p.kind == "chosen" else ""
        body.append(f'<text class="point-label" x="{px + dx:.1f}" y="{py + 4 - 11 * (i % 2) * 0:.1f}" '
                    f'text-anchor="{anchor}"{weight}>{_e(text)}</text>')
    legend = [(CHOSEN, "box", "chosen"), (COLOURS[0], "box", "meets the scenario")]
    if any(p.kind == "rejected" for p in points):
        legend.append(("#9aa3b2", "box", "rejected / closest miss"))
    if sla:
        legend.append((SLA_COLOUR, "line", sla[1]))
    return _frame(title, x, y, x_label, y_label, body, legend, key)


def line_svg(series: Mapping[str, Sequence[tuple[float, float]]], x_label: str, y_label: str, title: str,
             sla: tuple[float, str] | None = None, mark: tuple[float, float, str] | None = None,
             log_x: bool = False, key: str = "line") -> str:
    """One polyline per series, an SLA as a horizontal dashed line, one marked point (x, y, label)."""
    xs = [px for pts in series.values() for px, _ in pts]
    ys = [py for pts in series.values() for _, py in pts] + ([sla[0]] if sla else [])
    x = _Axis(min(xs or [1]), max(xs or [1]), LEFT, W - RIGHT, log=log_x) if log_x else \
        _Axis(*_padded(xs), LEFT, W - RIGHT)
    y = _Axis(*_padded(ys), H - BOTTOM, TOP)
    body: list[str] = []
    legend = []
    for i, (name, pts) in enumerate(series.items()):
        colour = COLOURS[i % len(COLOURS)]
        coords = " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in pts)
        body.append(f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"/>')
        body += [f'<circle cx="{x(a):.1f}" cy="{y(b):.1f}" r="3" fill="{colour}"/>' for a, b in pts]
        legend.append((colour, "box", name))
    if sla is not None:
        body += _hline(y, sla[0], sla[1])
        legend.append((SLA_COLOUR, "line", sla[1]))
    if mark is not None:
        px, py = x(mark[0]), y(mark[1])
        anchor, dx = ("end", -12) if px > W * 0.62 else ("start", 12)
        body += [f'<circle class="chosen" cx="{px:.1f}" cy="{py:.1f}" r="8" fill="none" stroke="{CHOSEN}" '
                 'stroke-width="2.5"/>',
                 f'<text x="{px + dx:.1f}" y="{py - 8:.1f}" text-anchor="{anchor}" font-weight="600" '
                 f'fill="{CHOSEN}">{_e(mark[2])}</text>']
        legend.append((CHOSEN, "box", mark[2]))
    return _frame(title, x, y, x_label, y_label, body, legend, key)


def memory_stack_svg(parts: Mapping[str, float], usable_bytes: float, title: str, key: str = "memory") -> str:
    """One bar per GPU stacked by part (bytes; drawn in GiB) against a usable-memory line. Each segment
    carries `data-bytes` so the geometry can be checked."""
    total = sum(parts.values())
    hi = max(total, usable_bytes, 1.0) / GIB * 1.12
    x = _Axis(0.0, hi, LEFT + 40, W - RIGHT)
    y = _Axis(0.0, 1.0, H - BOTTOM, TOP)
    bar_top, bar_h = TOP + 110, 70
    body: list[str] = []
    legend = []
    start = 0.0
    for i, (name, size) in enumerate(parts.items()):
        colour = COLOURS[i % len(COLOURS)]
        x0, x1 = x(start / GIB), x((start + size) / GIB)
        body.append(f'<rect class="segment" data-part="{_e(name)}" data-bytes="{size:.0f}" x="{x0:.2f}" '
                    f'y="{bar_top}" width="{x1 - x0:.2f}" height="{bar_h}" fill="{colour}"/>')
        if x1 - x0 > 44:
            body.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{bar_top + bar_h / 2 + 4}" text-anchor="middle" '
                        f'fill="#ffffff">{_e(f"{size / GIB:.1f}")}</text>')
        legend.append((colour, "box", f"{name}: {size / GIB:,.2f} GiB"))
        start += size
    ux = x(usable_bytes / GIB)
    body += [f'<line class="usable" data-bytes="{usable_bytes:.0f}" x1="{ux:.1f}" y1="{bar_top - 30}" '
             f'x2="{ux:.1f}" y2="{bar_top + bar_h + 30}" stroke="{USABLE_COLOUR}" stroke-width="2" '
             'stroke-dasharray="6 4"/>',
             f'<text x="{ux:.1f}" y="{bar_top + bar_h + 44}" text-anchor="middle">usable '
             f'{usable_bytes / GIB:,.1f} GiB</text>',
             f'<text x="{x(total / GIB):.1f}" y="{bar_top - 8}" text-anchor="middle" font-weight="600">'
             f'needed {total / GIB:,.1f} GiB</text>']
    legend.append((USABLE_COLOUR, "line", "usable memory per GPU"))
    y_hidden = _Axis(0.0, 1.0, H - BOTTOM, TOP)
    y_hidden.ticks = lambda: []  # a bar chart: no y ticks
    del y
    return _frame(title, x, y_hidden, "memory per GPU (GiB)", "", body, legend, key)


def roofline_svg(ops: Sequence[tuple[str, float, float]], bandwidth_bytes_per_s: float,
                 peaks: Mapping[str, float], title: str, key: str = "roofline") -> str:
    """Log-log roofline: (kind, arithmetic intensity FLOP/byte, attained FLOP/s) points, the memory
    slope and one flat compute roof per peak (FLOP/s)."""
    intens = [i for _, i, _ in ops if i > 0] or [1.0]
    lo, hi = max(min(min(intens), 0.1) / 2, 1e-3), max(max(intens) * 2, 1e3)
    top = max(list(peaks.values()) + [f for _, _, f in ops] + [1.0])
    bottom = max(min([f for _, _, f in ops if f > 0] + [min(lo * bandwidth_bytes_per_s, top)]) / 2, 1.0)
    x, y = _Axis(lo, hi, LEFT, W - RIGHT, log=True), _Axis(bottom, top * 1.5, H - BOTTOM, TOP, log=True)
    body: list[str] = []
    legend = []
    for i, (name, peak) in enumerate(sorted(peaks.items(), key=lambda kv: kv[1])):
        colour = COLOURS[(i + 3) % len(COLOURS)]
        knee = peak / bandwidth_bytes_per_s
        a = max(x.lo, y.lo / bandwidth_bytes_per_s)
        pts = [(a, a * bandwidth_bytes_per_s)] if knee > a else []
        pts += [(max(knee, x.lo), peak), (x.hi, peak)]
        coords = " ".join(f"{x(p):.1f},{y(q):.1f}" for p, q in pts)
        body.append(f'<polyline class="roof" points="{coords}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        legend.append((colour, "line", f"roof {name}: {peak / 1e12:,.1f} TFLOP/s"))
    kinds = sorted({k for k, _, _ in ops})
    for j, kind in enumerate(kinds):
        colour = COLOURS[j % 3]
        body += [f'<circle class="op" cx="{x(i):.1f}" cy="{y(f):.1f}" r="3.5" fill="{colour}" fill-opacity="0.7"/>'
                 for k, i, f in ops if k == kind and i > 0 and f > 0]
        legend.append((colour, "box", f"ops: {kind}"))
    legend.append(("#5b6475", "line", f"memory {bandwidth_bytes_per_s / 1e9:,.0f} GB/s"))
    return _frame(title, x, y, "arithmetic intensity (FLOP / byte)", "attained FLOP/s", body, legend, key)


def latency_axis(key: str) -> tuple[str, float]:
    """The axis label and the factor from the plan's unit for a latency key (seconds -> ms, hours kept)."""
    if key == "hours":
        return "job time (hours)", 1.0
    metric, _, pct = key.partition("_")
    name = {"ttft": "TTFT", "tpot": "TPOT", "e2e": "end-to-end latency", "latency": "per-request latency"}.get(
        metric, metric)
    return f"{name} {pct} (ms)".replace("  ", " "), 1e3


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


def _sla_key(result, keys: Sequence[str]) -> str | None:
    for prefix in ("ttft", "latency", "e2e", "tpot", "hours"):
        for k in keys:
            if k.startswith(prefix):
                return k
    return keys[0] if keys else None


def _cost_chart(result) -> Chart | None:
    chosen = result.chosen
    options = list(result.ranked) + ([result.closest] if result.closest is not None else [])
    keys = list(options[0].latency) if options else []
    key = _sla_key(result, keys)
    if key is None:
        return None
    label, factor = latency_axis(key)
    seen, points = set(), []
    for c in options:
        if c.label in seen or key not in c.latency:
            continue
        seen.add(c.label)
        kind = "chosen" if c is chosen else ("rejected" if c is result.closest else "option")
        points.append(Point(c.label.split(" (")[0] + ("" if kind != "rejected" else " (misses)"),
                            c.latency[key] * factor, c.cost_usd, kind))
    target = result.scenario.sla.targets.get(key)
    sla = None if target is None else (target * factor, f"SLA {label.split(' (')[0]} {target * factor:g} ms")
    job = key == "hours"
    y_label = "cost per job (USD)" if job else "monthly cost (USD)"
    title = "cost against job time" if job else f"cost against {label.split(' (')[0]}"
    return Chart("cost_vs_latency", title, scatter_svg(points, label, y_label, title, sla, key="cost_vs_latency"))


def _memory_chart(c) -> Chart | None:
    if not c.memory_bytes or not c.usable_bytes:
        return None
    parts = c.detail.get("memory_parts") or {"needed (split not known)": c.memory_bytes}
    title = f"memory per GPU: {c.label.split(' (')[0]}"
    return Chart("memory", title, memory_stack_svg(parts, c.usable_bytes, title))


def _batch_chart(result, c) -> Chart | None:
    batches, steps = c.detail.get("decode_batches"), c.detail.get("decode_step_s")
    if not batches or not steps:
        return None
    pts = [(float(b), s * 1e3) for b, s in zip(batches, steps)]
    target = next(((k, v) for k, v in result.scenario.sla.targets.items() if k.startswith("tpot")), None)
    sla = None if target is None else (target[1] * 1e3, f"SLA {target[0].replace('_', ' ')} {target[1] * 1e3:g} ms")
    mark = None
    if c.max_batch:
        at = min(pts, key=lambda p: abs(p[0] - c.max_batch))
        mark = (at[0], at[1], f"chosen batch {c.max_batch}")
    return Chart("latency_vs_batch", "decode step time against batch",
                 line_svg({"TPOT (decode step)": pts}, "concurrent sequences (log scale)", "TPOT (ms per token)",
                          "decode step time against batch", sla, mark, log_x=True, key="latency_vs_batch"))


def _roofline_chart(result, c) -> Chart | None:
    """The chosen configuration's decode step priced op by op (numpy, imported only here)."""
    arch = result.arch
    if arch is None or c.engine == "train" or not hasattr(arch, "layers"):
        return None
    from sizeup.ingest.transformer_ops import Step, transformer_ledger
    from sizeup.price.roofline import LedgerArrays, price

    traffic = result.scenario.traffic
    context = max(int(getattr(traffic, "prompt_tokens", 512)) + int(getattr(traffic, "output_tokens", 0)), 1)
    ledger = transformer_ledger(arch, Step(batch=max(c.max_batch, 1), new_tokens=1, context=context),
                                weights=c.quant if c.quant not in ("fp32",) else "bf16", tp=c.gpus, per_layer=False)
    ops, bandwidth, peaks = roofline_data(price(LedgerArrays.from_ledger(ledger), c.device))
    title = f"roofline: decode step at batch {max(c.max_batch, 1)} on {c.device.id}"
    return Chart("roofline", title, roofline_svg(ops, bandwidth, peaks, title))


def plan_charts(result) -> list[Chart]:
    """The charts of a plan result: cost against latency, memory per GPU, latency against batch and the
    roofline of the chosen configuration (each only where the plan has its data)."""
    charts = [_cost_chart(result)]
    c = result.chosen or result.closest
    if c is not None:
        charts += [_memory_chart(c), _batch_chart(result, c)]
        try:
            charts.append(_roofline_chart(result, c))
        except Exception as e:  # noqa: BLE001 - a chart must not sink the sheet; say which and why
            charts.append(Chart("roofline", "roofline not drawn", _note_svg(f"roofline not drawn: {e}")))
    return [ch for ch in charts if ch is not None]


def _note_svg(text: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} 40" width="{W}" height="40">'
            f'<text x="10" y="24" font-size="12">{_e(text)}</text></svg>')
