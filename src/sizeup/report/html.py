"""The compute requirement sheet as one self-contained HTML page.

Inline CSS, no scripts, no external fetches: plots are embedded as base64 `data:image/png` URIs when
their files exist (a missing file is named in the page instead). Every piece of text is escaped with
`sizeup.escape.html` (entities, control characters shown); values are formatted by unit exactly as in the Markdown report.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence

from sizeup.escape import html as _e
from sizeup.plan.sheet import Cell, Section, Sheet
from sizeup.report.markdown import format_cell, format_plain

__all__ = ["render_html"]

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
       background: #f4f5f7; color: #1d2330; line-height: 1.45; }
main { max-width: 960px; margin: 0 auto; padding: 24px 16px 48px; }
h1 { font-size: 1.6rem; margin: 0 0 12px; }
h2 { font-size: 1.15rem; margin: 0 0 12px; }
.verdict { padding: 12px 16px; border-radius: 8px; font-weight: 600; margin-bottom: 20px; }
.verdict.ok { background: #e3f5e8; border-left: 5px solid #2e9d51; }
.verdict.miss { background: #fdeaea; border-left: 5px solid #c93434; }
.card { background: #fff; border-radius: 10px; box-shadow: 0 1px 3px rgba(0,0,0,.08);
        padding: 16px 20px; margin-bottom: 18px; }
table { border-collapse: collapse; width: 100%; margin: 4px 0 12px; font-size: .95rem; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #e6e8ec; vertical-align: top; }
th { background: #f7f8fa; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.note, .muted { color: #5b6475; font-size: .9rem; }
code { background: #f0f1f4; padding: 1px 4px; border-radius: 4px; }
ul { margin: 6px 0; padding-left: 20px; }
figure { margin: 0 0 16px; }
figure svg { max-width: 100%; height: auto; border: 1px solid #e6e8ec; border-radius: 6px; }
figure img { max-width: 100%; height: auto; border: 1px solid #e6e8ec; border-radius: 6px; }
figcaption { color: #5b6475; font-size: .9rem; }
.headline { border-left: 6px solid #2e9d51; }
.headline.miss { border-left-color: #c93434; }
.headline .lead { font-size: 1.02rem; font-weight: 500; margin: 0 0 8px; }
.headline .cost { font-size: 1.6rem; font-weight: 700; margin: 0 0 4px; }
.headline table { font-size: .88rem; margin: 0; }
.headline th, .headline td { padding: 2px 10px; }
.headline th { width: 11rem; }
"""


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = []
    for row in rows:
        tds = "".join(f'<td class="num">{_e(c)}</td>' if numeric[i] else f"<td>{_e(c)}</td>"
                      for i, c in enumerate(row))
        body.append(f"<tr>{tds}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _cells_table(cells: Sequence[Cell]) -> str:
    rows = []
    for c in cells:
        rows.append(f'<tr><td>{_e(c.label)}</td><td class="num">{_e(format_cell(c))}</td>'
                    f'<td class="note">{_e(c.note)}</td></tr>')
    return ("<table><thead><tr><th>item</th><th>value</th><th>note</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _notes(items: Sequence[str]) -> str:
    return "<ul>" + "".join(f"<li>{_e(n)}</li>" for n in items) + "</ul>" if items else ""


def _section(section: Section) -> str:
    parts = [f"<h2>{_e(section.title)}</h2>"]
    if section.cells:
        parts.append(_cells_table(section.cells))
    if section.table_rows:
        width = len(section.table_rows[0])
        headers = section.table_headers or tuple(f"column {i + 1}" for i in range(width))
        numeric = [all(isinstance(r[i], (int, float)) and not isinstance(r[i], bool)
                       for r in section.table_rows if i < len(r)) for i in range(len(headers))]
        rows = [[format_plain(v) for v in row] for row in section.table_rows]
        parts.append(_table(headers, rows, numeric))
    parts.append(_notes(section.notes))
    if not (section.cells or section.table_rows or section.notes):
        parts.append('<p class="muted">nothing to report</p>')
    return f'<section class="card">{"".join(parts)}</section>'


def _plot(name: str, path: str) -> str:
    if os.path.isfile(path):
        with open(path, "rb") as f:
            data = base64.b64encode(f.read()).decode("ascii")
        mime = "image/svg+xml" if path.endswith(".svg") else "image/png"
        img = f'<img alt="{_e(name)}" src="data:{mime};base64,{data}">'
    else:
        img = f'<p class="muted">plot file not found: <code>{_e(path)}</code></p>'
    return f"<figure>{img}<figcaption>{_e(name)}</figcaption></figure>"


def _charts(charts: Sequence) -> str:
    """Inline SVG charts (report/charts.py: the SVG text is built there, its text already escaped)."""
    if not charts:
        return ""
    figures = "".join(f'<figure class="chart" id="chart-{_e(c.key)}">{c.svg}</figure>' for c in charts)
    return f'<section class="card charts"><h2>Charts</h2>{figures}</section>'


def _headline(sheet: Sheet) -> str:
    """The headline card: the cost in large type, the sentence, then the rows (what, cost bases, budget, SLA,
    assumptions)."""
    from sizeup.plan.headline import headline_rows

    h = sheet.headline
    rows = headline_rows(h)
    cost = next((v for k, v in rows if k == "cost"), "")
    table = "".join(f'<tr><th scope="row">{_e(k)}</th><td>{_e(v)}</td></tr>' for k, v in rows)
    return (f'<section class="card headline {"ok" if h.meets else "miss"}" id="headline">'
            + (f'<p class="cost">{_e(cost)}</p>' if cost else "")
            + f'<p class="lead">{_e(h.text)}</p>'
            + f"<table><tbody>{table}</tbody></table></section>")


def render_html(sheet: Sheet, charts: Sequence = ()) -> str:
    """The whole sheet as one HTML document (a string), with the same content as the Markdown report;
    `charts` (report.charts.Chart, e.g. from `plan_charts(result)`) go inline right after the headline."""
    verdict_class = "ok" if sheet.meets else "miss"
    mark = "meets" if sheet.meets else "does NOT meet"
    body = [f"<h1>{_e(sheet.title)}</h1>"]
    if sheet.headline is not None:
        body.append(_headline(sheet))
    body.append(_charts(charts))
    body.append(f'<div class="verdict {verdict_class}">Verdict ({_e(mark)} the scenario '
                f"<code>{_e(sheet.scenario)}</code>): {_e(sheet.verdict)}</div>")
    body += [_section(s) for s in sheet.sections]
    if sheet.inputs:
        body.append(f'<section class="card"><h2>Inputs</h2>{_cells_table(sheet.inputs)}</section>')
    if sheet.assumptions:
        body.append(f'<section class="card"><h2>Assumptions</h2>{_notes(sheet.assumptions)}</section>')
    inline = {c.key for c in charts}
    plots = {name: path for name, path in sheet.plots.items() if name not in inline}  # not twice
    if plots:
        figures = "".join(_plot(name, path) for name, path in plots.items())
        body.append(f'<section class="card"><h2>Plots</h2>{figures}</section>')
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{_e(sheet.title)}</title>\n<style>{_CSS}</style>\n</head>\n"
            f"<body>\n<main>\n{''.join(body)}\n</main>\n</body>\n</html>\n")
