"""Plain-text tables for the terminal (no third-party dependency, so the CLI starts fast)."""

from __future__ import annotations

from collections.abc import Sequence


def render_table(headers: Sequence[str], rows: Sequence[Sequence[object]], right: Sequence[bool] | None = None,
                 title: str | None = None) -> str:
    """A boxed-free aligned table; `right[i]` right-aligns column i (numbers)."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    right = right or [i > 0 for i in range(len(headers))]
    lines = []
    if title:
        lines.append(title)
    for n, row in enumerate(cells):
        parts = [c.rjust(w) if right[i] else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(parts).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _value(cell) -> str:
    from sizeup.units import format_bytes, format_seconds

    v = cell.value
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return str(v)
    if cell.unit == "bytes":
        return format_bytes(v)
    if cell.unit == "s":
        return format_seconds(v)
    if cell.unit == "USD":
        return f"${v:,.2f}" if abs(v) < 100 else f"${v:,.0f}"
    if cell.unit == "%":
        return f"{v:.0%}"
    text = f"{v:,.4g}" if isinstance(v, float) else f"{v:,}"
    return f"{text} {cell.unit}".strip()


def render_sheet(sheet) -> str:
    """The compute requirement sheet as plain text."""
    lines = [sheet.title, "=" * len(sheet.title)]
    if sheet.headline is not None:
        from sizeup.plan.headline import headline_rows

        lines += [sheet.headline.text, ""]
        lines.append(render_table(["headline", ""], headline_rows(sheet.headline), right=[False, False]))
        lines.append("")
    lines += [sheet.verdict, ""]
    for section in sheet.sections:
        lines.append(section.title)
        lines.append("-" * len(section.title))
        if section.cells:
            lines.append(render_table(["item", "value", "note"],
                                      [[c.label, _value(c), c.note] for c in section.cells], right=[False, True, False]))
        if section.table_rows:
            lines.append(render_table(list(section.table_headers), section.table_rows))
        lines.extend(f"  {n}" for n in section.notes)
        lines.append("")
    if sheet.inputs:
        lines += ["Inputs", "------"]
        lines.append(render_table(["input", "value", "note"], [[c.label, _value(c), c.note] for c in sheet.inputs],
                                  right=[False, True, False]))
        lines.append("")
    lines.extend(f"assumption: {a}" for a in sheet.assumptions)
    return "\n".join(lines)
