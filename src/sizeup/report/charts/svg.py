"""The chart kinds as hand-written SVG strings, from plain numbers (no plan types here).

Pure Python string building (no matplotlib, no scripts, no external fetches); every piece of text is
escaped (`sizeup.escape.html`: entities, and control characters shown, never raw in the XML). Each SVG
carries class/data- attributes (data-value, data-bytes) so tests and the UI can read the drawn values back."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sizeup.escape import html as _html_text

__all__ = ["Chart", "Point", "scatter_svg", "line_svg", "memory_stack_svg", "roofline_svg", "bars_svg",
           "latency_axis", "note_svg"]

W, H = 760, 400
LEFT, RIGHT, TOP, BOTTOM = 78, 220, 36, 58
"""The plot area; the legend sits in the right-hand column, clear of the data."""
LEGEND_CHARS = 30
CHAR_PX, LINE_PX = 6.2, 13
"""Approximate width of one 11 px character and the height of a label line, to keep labels apart."""
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
    return _html_text(text)


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

    def __init__(self, lo: float, hi: float, p0: float, p1: float, log: bool = False, ticked: bool = True):
        self.log, self.ticked = log, ticked
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
        if not self.ticked:  # the category axis of a bar chart
            return []
        if self.log:
            a, b = round(math.log10(self.lo)), round(math.log10(self.hi))
            stride = max(1, (b - a) // 6)
            return [10.0 ** k for k in range(a, b + 1, stride)]
        return [t for t in _ticks(self.lo, self.hi) if self.lo - 1e-12 <= t <= self.hi + 1e-12]


def _padded(values: Sequence[float]) -> tuple[float, float]:
    """A linear axis range from zero (or the lowest negative value) to 8% past the highest value."""
    lo, hi = (min(min(values), 0.0), max(values)) if values else (0.0, 1.0)
    span = (hi - lo) or abs(hi) or 1.0
    return (lo if lo == 0 else lo - 0.08 * span), hi + 0.08 * span


def _frame(title: str, x: _Axis, y: _Axis, x_label: str, y_label: str, body: list[str],
           legend: Sequence[tuple[str, str, str]] = (), key: str = "chart", height: int = H,
           notes: Sequence[str] = ()) -> str:
    """The whole SVG: title, grid, ticks, axis labels, the body, a legend of (colour, shape, label) and
    notes in the right-hand column (long lines wrapped)."""
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="{_e(key)}" '
           f'viewBox="0 0 {W} {height}" width="{W}" height="{height}" role="img" aria-label="{_e(title)}" '
           'font-family="system-ui, sans-serif" font-size="11">',
           f"<title>{_e(title)}</title>",
           f'<rect x="0" y="0" width="{W}" height="{height}" fill="#ffffff"/>',
           f'<text x="{(LEFT + W - RIGHT) / 2:.1f}" y="20" text-anchor="middle" font-size="14" '
           f'font-weight="600">{_e(title)}</text>']
    x0, x1, y0, y1 = LEFT, W - RIGHT, height - BOTTOM, TOP
    for t in x.ticks():
        px = x(t)
        out.append(f'<line x1="{px:.1f}" y1="{y1}" x2="{px:.1f}" y2="{y0}" stroke="#e6e8ec"/>')
        out.append(f'<text x="{px:.1f}" y="{y0 + 15}" text-anchor="middle" class="tick">{_e(_num(t))}</text>')
    for t in y.ticks():
        py = y(t)
        out.append(f'<line x1="{x0}" y1="{py:.1f}" x2="{x1}" y2="{py:.1f}" stroke="#e6e8ec"/>')
        out.append(f'<text x="{x0 - 6}" y="{py + 4:.1f}" text-anchor="end" class="tick">{_e(_num(t))}</text>')
    out.append(f'<rect x="{x0}" y="{y1}" width="{x1 - x0}" height="{y0 - y1}" fill="none" stroke="#5b6475"/>')
    out.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{height - 16}" text-anchor="middle" font-size="12" '
               f'class="axis-label">{_e(x_label)}</text>')
    out.append(f'<text transform="translate(16 {(y0 + y1) / 2:.1f}) rotate(-90)" text-anchor="middle" '
               f'font-size="12" class="axis-label">{_e(y_label)}</text>')
    out.extend(body)
    lx, ly = x1 + 14, y1 + 10
    for colour, shape, label in legend:
        if shape in ("line", "dash"):
            dash = ' stroke-dasharray="5 3"' if shape == "dash" else ""
            out.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 16}" y2="{ly - 4}" stroke="{colour}" '
                       f'stroke-width="2"{dash}/>')
        else:
            out.append(f'<rect x="{lx + 4}" y="{ly - 9}" width="9" height="9" fill="{colour}"/>')
        for line in textwrap.wrap(label, LEGEND_CHARS) or [""]:
            out.append(f'<text x="{lx + 22}" y="{ly}" class="legend">{_e(line)}</text>')
            ly += 14
        ly += 1
    ly += 4
    for note in notes:
        for line in textwrap.wrap(note, LEGEND_CHARS + 4, subsequent_indent="  "):
            out.append(f'<text x="{lx}" y="{ly}" class="note" fill="#5b6475" font-size="10">{_e(line)}</text>')
            ly += 12
    out.append("</svg>")
    return "\n".join(out)


def _hline(y: _Axis, value: float, label: str, colour: str = SLA_COLOUR) -> list[str]:
    py = y(value)
    return [f'<line class="sla" data-value="{value:g}" x1="{LEFT}" y1="{py:.1f}" x2="{W - RIGHT}" y2="{py:.1f}" '
            f'stroke="{colour}" stroke-width="1.5" stroke-dasharray="6 4"/>',
            f'<text x="{W - RIGHT - 4}" y="{py - 5:.1f}" text-anchor="end" fill="{colour}">{_e(label)}</text>']


def _free_line(placed: Sequence[tuple[float, float, float]], x0: float, x1: float, y: float) -> float:
    """The baseline nearest `y` (stepping a line down, then up) where a label over [x0, x1] overlaps no
    label already placed."""
    for k in range(40):
        cand = y + LINE_PX * ((k + 1) // 2) * (1 if k % 2 else -1)
        if all(cand - b >= LINE_PX or b - cand >= LINE_PX or x1 <= a0 or x0 >= a1 for a0, a1, b in placed):
            return cand
    return y


def scatter_svg(points: Sequence[Point], x_label: str, y_label: str, title: str,
                sla: tuple[float, str] | None = None, key: str = "scatter", notes: Sequence[str] = (),
                legend: Mapping[str, str] | None = None, log_x: bool = False) -> str:
    """Labelled points (the chosen one ringed and named), and an SLA as a vertical dashed line at x.
    `legend` names each kind of point (default: a plan's "chosen", "meets the scenario", "rejected / closest
    miss"); a point with an empty label is drawn without one."""
    xs = [p.x for p in points] + ([sla[0]] if sla else [])
    ys = [p.y for p in points]
    names = {"chosen": "chosen", "option": "meets the scenario", "rejected": "rejected / closest miss",
             **(legend or {})}
    x = _Axis(min(xs or [1]), max(xs or [1]), LEFT, W - RIGHT, log=True) if log_x else \
        _Axis(*_padded(xs), LEFT, W - RIGHT)
    y = _Axis(*_padded(ys), H - BOTTOM, TOP)
    body: list[str] = []
    if sla is not None:
        px = x(sla[0])
        body += [f'<line class="sla" data-value="{sla[0]:g}" x1="{px:.1f}" y1="{TOP}" x2="{px:.1f}" '
                 f'y2="{H - BOTTOM}" stroke="{SLA_COLOUR}" stroke-width="1.5" stroke-dasharray="6 4"/>',
                 f'<text x="{px - 4:.1f}" y="{TOP + 12}" text-anchor="end" fill="{SLA_COLOUR}">{_e(sla[1])}</text>']
    order = sorted(points, key=lambda p: p.kind != "chosen")  # the choice placed first: its label stays put
    placed: list[tuple[float, float, float]] = []  # label boxes (x0, x1, baseline) already drawn
    for p in order:
        px, py = x(p.x), y(p.y)
        if p.kind == "chosen":
            body.append(f'<circle class="chosen" cx="{px:.1f}" cy="{py:.1f}" r="8" fill="none" '
                        f'stroke="{CHOSEN}" stroke-width="2.5"/>')
            body.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="4" fill="{CHOSEN}"/>')
        else:
            fill = "#9aa3b2" if p.kind == "rejected" else COLOURS[0]
            body.append(f'<circle class="{_e(p.kind)}" cx="{px:.1f}" cy="{py:.1f}" r="4.5" fill="{fill}" '
                        'fill-opacity="0.85"/>')
        if not p.label:
            continue
        text = f"{p.label} (chosen)" if p.kind == "chosen" and legend is None else p.label
        left = px > LEFT + 0.55 * (W - RIGHT - LEFT)
        width = CHAR_PX * len(text)
        bx0, bx1 = (px - 10 - width, px - 10) if left else (px + 10, px + 10 + width)
        ty = _free_line(placed, bx0, bx1, py + 4)
        placed.append((bx0, bx1, ty))
        weight = ' font-weight="600"' if p.kind == "chosen" else ""
        body.append(f'<text class="point-label" x="{px + (-10 if left else 10):.1f}" y="{ty:.1f}" '
                    f'text-anchor="{"end" if left else "start"}"{weight}>{_e(text)}</text>')
    legend = [(colour, "box", names[kind]) for kind, colour in (("chosen", CHOSEN), ("option", COLOURS[0]),
                                                                 ("rejected", "#9aa3b2"))
              if any(p.kind == kind for p in points) or (kind == "option" and legend is None)]
    if sla:
        legend.append((SLA_COLOUR, "dash", sla[1]))
    return _frame(title, x, y, x_label, y_label, body, legend, key, notes=notes)


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
        legend.append((SLA_COLOUR, "dash", sla[1]))
    if mark is not None:
        px, py = x(mark[0]), y(mark[1])
        anchor, dx = ("end", -12) if px > LEFT + 0.55 * (W - RIGHT - LEFT) else ("start", 12)
        body += [f'<circle class="chosen" cx="{px:.1f}" cy="{py:.1f}" r="8" fill="none" stroke="{CHOSEN}" '
                 'stroke-width="2.5"/>',
                 f'<text x="{px + dx:.1f}" y="{py - 8:.1f}" text-anchor="{anchor}" font-weight="600" '
                 f'fill="{CHOSEN}">{_e(mark[2])}</text>']
        legend.append((CHOSEN, "box", mark[2]))
    return _frame(title, x, y, x_label, y_label, body, legend, key)


def memory_stack_svg(parts: Mapping[str, float], usable_bytes: float, title: str, key: str = "memory") -> str:
    """One bar per GPU stacked by part (bytes; drawn in GiB) against a usable-memory line. Each segment
    carries `data-bytes` and its pixel extent so the geometry can be checked."""
    height = 240
    total = sum(parts.values())
    x = _Axis(0.0, max(total, usable_bytes, 1.0) / GIB * 1.1, LEFT, W - RIGHT)
    y = _Axis(0.0, 1.0, height - BOTTOM, TOP, ticked=False)
    bar_top, bar_h = TOP + 42, 64
    body: list[str] = []
    legend = []
    start = 0.0
    for i, (name, size) in enumerate(parts.items()):
        colour = COLOURS[i % len(COLOURS)]
        x0, x1 = x(start / GIB), x((start + size) / GIB)
        body.append(f'<rect class="segment" data-part="{_e(name)}" data-bytes="{size:.0f}" x="{x0:.3f}" '
                    f'y="{bar_top}" width="{x1 - x0:.3f}" height="{bar_h}" fill="{colour}"/>')
        if x1 - x0 > 34:
            body.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{bar_top + bar_h / 2 + 4}" text-anchor="middle" '
                        f'fill="#ffffff">{_e(f"{size / GIB:.1f}")}</text>')
        legend.append((colour, "box", f"{name}: {size / GIB:,.2f} GiB"))
        start += size
    ux = x(usable_bytes / GIB)
    body += [f'<line class="usable" data-bytes="{usable_bytes:.0f}" x1="{ux:.3f}" y1="{bar_top - 24}" '
             f'x2="{ux:.3f}" y2="{bar_top + bar_h + 16}" stroke="{USABLE_COLOUR}" stroke-width="2" '
             'stroke-dasharray="6 4"/>',
             f'<text x="{ux - 4:.1f}" y="{bar_top + bar_h + 30}" text-anchor="end">usable '
             f'{usable_bytes / GIB:,.1f} GiB</text>',
             f'<text class="total" data-bytes="{total:.0f}" x="{LEFT + 4}" y="{bar_top - 10}" font-weight="600">'
             f'needed {total / GIB:,.1f} GiB ({total / max(usable_bytes, 1.0):.0%} of usable)</text>']
    legend.append((USABLE_COLOUR, "dash", "usable memory per GPU"))
    return _frame(title, x, y, "memory per GPU (GiB)", "", body, legend, key, height=height)


def roofline_svg(ops: Sequence[tuple[str, float, float]], bandwidth_bytes_per_s: float,
                 peaks: Mapping[str, float], title: str, key: str = "roofline") -> str:
    """Log-log roofline: (kind, arithmetic intensity FLOP/byte, attained FLOP/s) points, the memory
    slope and one flat compute roof per peak (FLOP/s) from its ridge point on."""
    intens = [i for _, i, _ in ops if i > 0] or [1.0]
    ridges = [p / bandwidth_bytes_per_s for p in peaks.values()] or [10.0]
    lo, hi = max(min(min(intens), 0.1) / 2, 1e-3), max(max(intens) * 2, max(ridges) * 2, 1e3)
    top = max(list(peaks.values()) + [f for _, _, f in ops] + [1.0])
    bottom = max(min([f for _, _, f in ops if f > 0] + [lo * bandwidth_bytes_per_s]) / 2, 1.0)
    x, y = _Axis(lo, hi, LEFT, W - RIGHT, log=True), _Axis(bottom, top * 1.5, H - BOTTOM, TOP, log=True)
    body: list[str] = []
    legend = []
    a = max(x.lo, y.lo / bandwidth_bytes_per_s)
    slope_end = max(ridges)
    body.append(f'<line class="memory-roof" x1="{x(a):.1f}" y1="{y(a * bandwidth_bytes_per_s):.1f}" '
                f'x2="{x(slope_end):.1f}" y2="{y(slope_end * bandwidth_bytes_per_s):.1f}" stroke="#5b6475" '
                'stroke-width="2"/>')
    for i, (name, peak) in enumerate(sorted(peaks.items(), key=lambda kv: kv[1])):
        colour = COLOURS[(i + 3) % len(COLOURS)]
        knee = peak / bandwidth_bytes_per_s
        body.append(f'<line class="roof" data-flops="{peak:g}" x1="{x(knee):.1f}" y1="{y(peak):.1f}" '
                    f'x2="{x(x.hi):.1f}" y2="{y(peak):.1f}" stroke="{colour}" stroke-width="1.5"/>')
        legend.append((colour, "line", f"{name}: {peak / 1e12:,.1f} TFLOP/s"))
    legend.append(("#5b6475", "line", f"memory: {bandwidth_bytes_per_s / 1e9:,.0f} GB/s"))
    for j, kind in enumerate(sorted({k for k, _, _ in ops})):
        colour = COLOURS[j % 3] if j < 3 else COLOURS[5 + j % 3]
        body += [f'<circle class="op" cx="{x(i):.1f}" cy="{y(f):.1f}" r="3.5" fill="{colour}" fill-opacity="0.7"/>'
                 for k, i, f in ops if k == kind and i > 0 and f > 0]
        legend.append((colour, "box", f"ops: {kind}"))
    return _frame(title, x, y, "arithmetic intensity (FLOP / byte)", "attained FLOP/s", body, legend, key)


def bars_svg(values: Mapping[str, float], x_label: str, title: str, mark: str | None = None,
             line: tuple[float, str] | None = None, key: str = "bars") -> str:
    """Horizontal bars (label -> value), one marked, an optional vertical line (e.g. the budget)."""
    height = max(200, TOP + BOTTOM + 30 * len(values) + 20)
    hi = max(list(values.values()) + ([line[0]] if line else []) + [1e-9]) * 1.1
    width = max((len(k) for k in values), default=8)
    x = _Axis(0.0, hi, min(LEFT + 6 * width, W - RIGHT - 120), W - RIGHT)
    y = _Axis(0.0, 1.0, height - BOTTOM, TOP, ticked=False)
    body: list[str] = []
    for i, (name, value) in enumerate(values.items()):
        top = TOP + 14 + 30 * i
        colour = CHOSEN if name == mark else COLOURS[0]
        body += [f'<rect class="bar" data-label="{_e(name)}" data-value="{value:g}" x="{x(0):.1f}" y="{top}" '
                 f'width="{x(value) - x(0):.2f}" height="20" fill="{colour}"/>',
                 f'<text x="{x(0) - 6:.1f}" y="{top + 14}" text-anchor="end">{_e(name)}</text>',
                 f'<text x="{x(value) + 4:.1f}" y="{top + 14}">{_e(_num(value))}</text>']
    legend = [(CHOSEN, "box", f"{mark} (used)")] if mark in values else []
    if line is not None:
        px = x(line[0])
        body.append(f'<line class="limit" data-value="{line[0]:g}" x1="{px:.1f}" y1="{TOP}" x2="{px:.1f}" '
                    f'y2="{height - BOTTOM}" stroke="{SLA_COLOUR}" stroke-width="1.5" stroke-dasharray="6 4"/>')
        legend.append((SLA_COLOUR, "dash", line[1]))
    return _frame(title, x, y, x_label, "", body, legend, key, height=height)


def latency_axis(key: str) -> tuple[str, float]:
    """The axis label and the factor from the plan's unit for a latency key (seconds -> ms, hours kept)."""
    if key == "hours":
        return "job time (hours)", 1.0
    metric, _, pct = key.partition("_")
    name = {"ttft": "TTFT", "tpot": "TPOT", "e2e": "end-to-end latency", "latency": "per-request latency"}.get(
        metric, metric)
    return f"{name} {pct} (ms)".replace("  ", " "), 1e3


def note_svg(text: str) -> str:
    """A one-line SVG saying why a chart is not drawn."""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart-note" viewBox="0 0 {W} 40" width="{W}" '
            f'height="40"><text x="10" y="24" font-size="12">{_e(text)}</text></svg>')
