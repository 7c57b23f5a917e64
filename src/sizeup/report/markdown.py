"""The compute requirement sheet as Markdown (GitHub-flavoured tables).

Values are formatted by each cell's `unit` field (never by its key): "bytes" with binary prefixes,
"s" as a duration, "USD" and "USD/<period>" with a dollar sign, "%" as a percentage of a fraction
(0.2 -> 20%), anything else as a number with thousands separators followed by its unit.
`format_cell` and `format_plain` are shared with the HTML renderer. Every piece of text (titles, the
scenario's name, labels, notes, values) passes `sizeup.escape.markdown`: no raw HTML, no markup, one line.
"""

from __future__ import annotations

from collections.abc import Sequence

from urllib.parse import quote

from sizeup.escape import markdown as _escape
from sizeup.plan.sheet import Cell, Section, Sheet
from sizeup.units import format_bytes, format_seconds

__all__ = ["format_cell", "format_plain", "render_markdown"]


def format_plain(value: object) -> str:
    """A value without a unit: integers and large floats with thousands separators, others to 4 digits."""
    if value is None:
        return ""
    if isinstance(value, bool) or isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return str(value)
        if value.is_integer() or abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.4g}"
    return str(value)


def _dollars(value: float) -> str:
    sign = "-" if value < 0 else ""
    amount = abs(value)
    return f"{sign}${amount:,.0f}" if amount >= 100 else f"{sign}${amount:,.2f}"


def format_cell(cell: Cell) -> str:
    """The cell's value with its unit, for a human reader."""
    v, unit = cell.value, cell.unit
    if v is None or isinstance(v, (bool, str)):
        text = format_plain(v)
        return f"{text} {unit}".strip() if isinstance(v, str) and unit else text
    if unit == "bytes":
        return format_bytes(v)
    if unit == "s":
        return format_seconds(v)
    if unit == "USD":
        return _dollars(v)
    if unit.startswith("USD/"):
        return f"{_dollars(v)}/{unit.removeprefix('USD/')}"
    if unit == "%":
        return f"{v * 100:.4g}%"
    return f"{format_plain(v)} {unit}".strip()


def _link(path: str) -> str:
    """A link target: the path percent-encoded, so no character of it (a space, a parenthesis, '<', a
    newline) can end the link or open markup."""
    return quote(str(path), safe="/._-~:")


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(_escape(h) for h in headers) + " |",
             "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_escape(c) for c in row) + " |" for row in rows]
    return lines


def _cells_table(cells: Sequence[Cell]) -> list[str]:
    with_notes = any(c.note for c in cells)
    headers = ("item", "value", "note") if with_notes else ("item", "value")
    rows = [(c.label, format_cell(c), c.note) if with_notes else (c.label, format_cell(c)) for c in cells]
    return _table(headers, rows)


def _section(section: Section) -> list[str]:
    lines = [f"## {_escape(section.title)}", ""]
    if section.cells:
        lines += _cells_table(section.cells) + [""]
    if section.table_rows:
        headers = section.table_headers or tuple(f"column {i + 1}" for i in range(len(section.table_rows[0])))
        lines += _table(headers, [[format_plain(v) for v in row] for row in section.table_rows]) + [""]
    if section.notes:
        lines += [f"- {_escape(note)}" for note in section.notes] + [""]
    if not (section.cells or section.table_rows or section.notes):
        lines += ["_nothing to report_", ""]
    return lines


def render_markdown(sheet: Sheet) -> str:
    """The whole sheet: title, headline, verdict, sections, then inputs, assumptions and plot links."""
    mark = "meets" if sheet.meets else "does NOT meet"
    lines = [f"# {_escape(sheet.title)}", ""]
    if sheet.headline is not None:
        from sizeup.plan.headline import headline_rows

        lines += [f"**{_escape(sheet.headline.text)}**", ""] + _table(("headline", ""), headline_rows(sheet.headline))
        lines.append("")
    lines += [f"**Verdict ({mark} the scenario {_escape(sheet.scenario)}):** {_escape(sheet.verdict)}", ""]
    for section in sheet.sections:
        lines += _section(section)
    if sheet.inputs:
        lines += ["## Inputs", ""] + _cells_table(sheet.inputs) + [""]
    if sheet.assumptions:
        lines += ["## Assumptions", ""] + [f"- {_escape(a)}" for a in sheet.assumptions] + [""]
    if sheet.plots:
        lines += ["## Plots", ""] + [f"![{_escape(name)}]({_link(path)})" for name, path in sheet.plots.items()] + [""]
    return "\n".join(lines).rstrip() + "\n"
