"""sizeup.escape: one function per output kind; hostile names come out inert and visible."""

import pytest

from sizeup.errors import ConfigError, describe_error
from sizeup.escape import html, markdown, spreadsheet_text, terminal, terminal_line

CLEAR = "\x1b[2J\x1b[H"
FORGED = "ok\rsizeup: error: forged"
HOSTILE = [CLEAR, FORGED, "a\x9b31mred", "bidi\u202eevil", "nul\x00", "bell\x07", "line\u2028sep", "zw\u200bj"]


@pytest.mark.parametrize("text", HOSTILE)
def test_terminal_shows_every_control_character_escaped(text):
    for out in (terminal(text), terminal_line(text), markdown(text), html(text)):
        assert all(ch.isprintable() for ch in out), repr(out)
    assert "\\" in terminal(text)  # shown, not dropped


def test_terminal_keeps_layout_and_plain_text():
    assert terminal("a\tb\nc") == "a\tb\nc"
    assert terminal_line("a\tb\nc") == "a\\tb\\nc"
    assert terminal("H100 SXM · 80 GiB — 3.35 TB/s") == "H100 SXM · 80 GiB — 3.35 TB/s"
    assert terminal(CLEAR) == "\\x1b[2J\\x1b[H"
    assert terminal(FORGED) == "ok\\rsizeup: error: forged"


def test_markdown_neutralises_markup_and_html():
    out = markdown("<script>alert(1)</script> | *x* _y_ [l](http://e) `c` &lt;")
    assert "<script" not in out.replace("\\<script", "")
    for raw in ("|", "*", "_", "[", "]", "`", "&"):
        assert out.count(raw) == out.count("\\" + raw), raw
    assert markdown("a\nb") == "a\\\\nb"  # renders as a\nb on one line: a name cannot start a new block


def test_html_escapes_entities_quotes_and_controls():
    assert html('<b a="x">\'&\x1b') == "&lt;b a=&quot;x&quot;&gt;&#x27;&amp;\\x1b"


@pytest.mark.parametrize("text, guarded", [("=1+1", True), ("+1", True), ("-2", True), ("@SUM(A1)", True),
                                           ("\tx", True), ("\rx", True), ("H100", False), (" =1", False)])
def test_spreadsheet_text_flags_formula_starts(text, guarded):
    assert spreadsheet_text(text) is guarded


def test_error_lines_are_escaped_at_the_boundary():
    report = describe_error(ConfigError(f"unknown device {CLEAR}x"))
    assert "\x1b" not in report.message and "\\x1b[2J" in report.message
    assert describe_error(ConfigError(FORGED)).message == "ok"  # only the first line: nothing forged after it
