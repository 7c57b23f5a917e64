"""Plain-text tables for the terminal (no third-party dependency, so the CLI starts fast). Every piece
of text passes `sizeup.escape.terminal_line`: a name from a file cannot carry an escape sequence."""

from __future__ import annotations

from collections.abc import Sequence

from sizeup.escape import terminal_line


def render_table(headers: Sequence[str], rows: Sequence[Sequence[object]], right: Sequence[bool] | None = None,
                 title: str | None = None) -> str:
    """A boxed-free aligned table; `right[i]` right-aligns column i (numbers)."""
    cells = [[terminal_line(c) for c in headers]] + [[terminal_line(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    right = right or [i > 0 for i in range(len(headers))]
    lines = []
    if title:
        lines.append(terminal_line(title))
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
    title = terminal_line(sheet.title)
    lines = [title, "=" * len(title)]
    if sheet.headline is not None:
        from sizeup.plan.headline import headline_rows

        lines += [terminal_line(sheet.headline.text), ""]
        lines.append(render_table(["headline", ""], headline_rows(sheet.headline), right=[False, False]))
        lines.append("")
    lines += [terminal_line(sheet.verdict), ""]
    for section in sheet.sections:
        heading = terminal_line(section.title)
        lines += [heading, "-" * len(heading)]
        if section.cells:
            lines.append(render_table(["item", "value", "note"],
                                      [[c.label, _value(c), c.note] for c in section.cells], right=[False, True, False]))
        if section.table_rows:  # numbers right-aligned, text (commands, labels) left
            right = [all(isinstance(r[i], (int, float)) and not isinstance(r[i], bool) for r in section.table_rows)
                     for i in range(len(section.table_headers))]
            lines.append(render_table(list(section.table_headers), section.table_rows, right=right))
        lines.extend(f"  {terminal_line(n)}" for n in section.notes)
        lines.append("")
    if sheet.inputs:
        lines += ["Inputs", "------"]
        lines.append(render_table(["input", "value", "note"], [[c.label, _value(c), c.note] for c in sheet.inputs],
                                  right=[False, True, False]))
        lines.append("")
    lines.extend(f"assumption: {terminal_line(a)}" for a in sheet.assumptions)
    return "\n".join(lines)
