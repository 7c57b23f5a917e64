"""Text from files and users made safe for each place sizeup writes it: one function per output kind.

A model's `general.name`, a catalog's device name, a scenario's name or a server's error text may carry
control characters: an escape sequence that clears the screen or recolours it, a carriage return that
overwrites a line (a forged `sizeup: error: …`), a bidi override that reorders what is shown. Every
renderer passes such text through the function of its output:

- `terminal(text)`: control characters shown as Python escapes (`\\x1b`, `\\r`, `\\u202e`); newlines and
  tabs kept. `terminal_line(text)` folds newlines too (one line: tables, error messages).
- `markdown(text)`: one line, inline Markdown and raw HTML neutralised by backslash escapes.
- `html(text)`: HTML text or a quoted attribute value (entities as `html.escape(quote=True)` writes them).
- `spreadsheet_text(text)`: True when a text cell must be stored as text with Excel's quote prefix (it
  begins with `=`, `+`, `-`, `@`, a tab or a carriage return, which a spreadsheet could read as a
  formula); `report/xlsx.py` writes every text cell through it.

Only the standard library: the error classes (layer 0) use `terminal_line` too.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["terminal", "terminal_line", "markdown", "html", "spreadsheet_text", "FORMULA_PREFIXES"]

_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
"""Control (C0, DEL, C1 such as the 8-bit CSI 0x9b), format (bidi overrides, zero-width), line and
paragraph separators, lone surrogates. Spaces (Zs) and private-use characters are left alone."""

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
"""A text cell starting with one of these may be read as a formula by a spreadsheet (OWASP CSV injection)."""

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<|~&!#])")
"""Inline Markdown: emphasis, code, links and images, raw HTML and entities, table pipes, strike-through,
headings. Parentheses matter only after ']' and '>' only at the start of a line, so they stay readable."""


def _unsafe(ch: str) -> bool:
    return unicodedata.category(ch) in _UNSAFE_CATEGORIES


def _shown(ch: str) -> str:
    """A character as a visible escape: \\x1b, \\r, \\u202e (Python's repr of it)."""
    return repr(ch)[1:-1]


_CANDIDATES = re.compile("[^\x20-\x7e\t\n]")
"""Characters that may need escaping in text that keeps its layout: the regex scan runs at C speed, and
only what it finds (rare) is looked up in the Unicode database."""
_LINE_CANDIDATES = re.compile("[^\x20-\x7e]")


def _escaped(match: re.Match[str]) -> str:
    ch = match.group()
    return _shown(ch) if ch in "\t\n" or _unsafe(ch) else ch


def terminal(text: object) -> str:
    """Text for a terminal: every control and format character escaped except newline and tab."""
    return _CANDIDATES.sub(_escaped, str(text))


def terminal_line(text: object) -> str:
    """One line for a terminal: newlines and tabs escaped as well."""
    return _LINE_CANDIDATES.sub(_escaped, str(text))


def markdown(text: object) -> str:
    """Text inside a Markdown paragraph, heading, bullet or table cell: one line, control characters
    escaped visibly, and every character that could open inline markup or raw HTML backslash-escaped
    (CommonMark lets any ASCII punctuation be escaped)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", terminal_line(text))


def html(text: object) -> str:
    """Text inside an HTML element or a quoted attribute: control characters escaped visibly, then
    `& < > " '` as entities."""
    out = terminal(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return out.replace('"', "&quot;").replace("'", "&#x27;")  # as html.escape(quote=True), without its import


def spreadsheet_text(text: str) -> bool:
    """True when `text`, written to a spreadsheet cell, must be marked as text (not a formula)."""
    return text.startswith(FORMULA_PREFIXES)
