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
