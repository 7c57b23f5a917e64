"""An upper bound of a YAML text's nesting depth, found without parsing it.

libyaml's C loader recurses once per nesting level and overflows the C stack (a segfault, not an
exception) on inputs such as 100,000 '[' — so every YAML a user hands sizeup (scenarios, catalog and
data files) is measured with this bound before it is parsed."""

from __future__ import annotations

import re

__all__ = ["MAX_YAML_NESTING", "yaml_nesting_bound"]

MAX_YAML_NESTING = 64
"""Deeper than any scenario or data file sizeup reads; far below what overflows libyaml's stack."""

_LEADING_DASHES = re.compile(r"(?:-[ \t]+)*")


def yaml_nesting_bound(text: str) -> int:
    """An upper bound of the YAML's nesting depth, without parsing it: per line, block nesting (a
    mapping in a mapping needs one more column of indentation, a sequence in a mapping none but its
    items' mappings two more, so at most one level per column, plus one per leading '- ' and two) plus
    the open flow brackets. Brackets inside quotes count too, so the bound can only be too high."""
    worst = flow = 0
    for line in text.splitlines():
        body = line.lstrip(" ")
        if not body or body.startswith("#"):
            continue
        block = len(line) - len(body) + _LEADING_DASHES.match(body).group().count("-") + 2
        top = flow
        if "[" in body or "{" in body or "]" in body or "}" in body:
            for ch in body:
                if ch in "[{":
                    flow += 1
                    top = max(top, flow)
                elif ch in "]}":
                    flow = max(flow - 1, 0)
        worst = max(worst, block + top)
    return worst
