"""Markdown, HTML and XLSX renderers of the compute requirement sheet, on a small hand-built sheet."""

from __future__ import annotations

import re
import sys

import pytest

from sizeup.errors import ConfigError
from sizeup.plan.sheet import Cell, Section, Sheet
from sizeup.report.html import render_html
from sizeup.report.markdown import render_markdown
from sizeup.report.xlsx import write_xlsx
from sizeup.units import GIB

MONTHLY_USD = 3 * 4.1 * 730
PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
       b"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")


REPLICAS_FORMULA = "=ROUNDUP({peak_rps}/{rps_per_replica},0)+1"


def make_sheet(plots: dict[str, str] | None = None, formula: str = REPLICAS_FORMULA) -> Sheet:
    inputs = (Cell(key="peak_rps", label="peak requests per second", value=277.8, unit="req/s"),
              Cell(key="rps_per_replica", label="requests per second per replica", value=230, unit="req/s"),
              Cell(key="price_per_hour", label="instance price", value=4.1, unit="USD/h", note="price of 2025-01"),
              Cell(key="hours_per_month", label="hours per month", value=730, unit="h"))
    cost = Section(title="Cost budget", cells=(
        Cell(key="replicas", label="replicas with N+1", value=3, formula=formula),
        Cell(key="monthly_usd", label="monthly cost", value=MONTHLY_USD, unit="USD",
             formula="={replicas}*{price_per_hour}*{hours_per_month}"),
        Cell(key="memory_needed", label="memory needed per GPU", value=80 * GIB, unit="bytes"),
        Cell(key="ttft_p99", label="TTFT p99", value=0.25, unit="s", note="target < 0.3 s"),
        Cell(key="utilisation", label="utilisation at the peak", value=0.75, unit="%"),
        Cell(key="memory_bytes_total", label="tokens per month", value=1234567),  # no unit: a plain number
    ), notes=("spot capacity can be reclaimed",))
    hardware = Section(title="Hardware selection", cells=(Cell(key="device", label="device", value="H100 <SXM>"),),
                       table_headers=("runner-up", "cost (USD)", "latency"),
                       table_rows=(("2x L40S", 12345.5, "ttft_p99 <0.4"), ("A100 & co", 9000, "ok")))
    return Sheet(title="Compute requirement sheet: chat", scenario="chat", meets=True,
                 verdict="meets the scenario with 3x H100", inputs=inputs, sections=(cost, hardware),
                 assumptions=("efficiency 0.6 of peak",), plots=plots or {})


# ---- Markdown -------------------------------------------------------------------------------

def test_markdown_formats_by_unit():
    md = render_markdown(make_sheet())
    assert md.startswith("# Compute requirement sheet: chat\n")
    assert "meets the scenario with 3x H100" in md
    for text in ("| peak requests per second | 277.8 req/s |", "$4.10/h", "730 h", "| monthly cost | $8,979 |",
                 "| memory needed per GPU | 80 GiB |", "250 ms", "75%", "1,234,567", "12,346",
                 "| runner-up | cost (USD) | latency |", "- spot capacity can be reclaimed",
                 "## Assumptions", "- efficiency 0.6 of peak"):
        assert text in md, text
    assert "MiB" not in md.split("tokens per month")[1].split("\n")[0]  # the key name does not decide the format
    assert "Plots" not in md
    assert "H100 \\<SXM\\>" not in md and "| device | H100 \\<SXM> |" in md  # no raw HTML tag


def test_markdown_plots_are_image_links():
    md = render_markdown(make_sheet(plots={"roofline": "out/roofline.png"}))
    assert "![roofline](out/roofline.png)" in md


# ---- HTML -----------------------------------------------------------------------------------

def test_html_is_self_contained_and_escaped(tmp_path):
    png = tmp_path / "roofline.png"
    png.write_bytes(PNG)
    page = render_html(make_sheet(plots={"roofline": str(png), "missing": str(tmp_path / "nope.png")}))
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.I)
    assert "<script" not in page.lower() and "<link" not in page.lower() and "@import" not in page
    assert 'src="data:image/png;base64,' in page
    assert "nope.png" in page  # a missing plot is named, not fetched
    assert "H100 &lt;SXM&gt;" in page and "<SXM>" not in page
    assert "target &lt; 0.3 s" in page and "A100 &amp; co" in page
    for text in ("$8,979", "80 GiB", "250 ms", "277.8 req/s", "Cost budget", "efficiency 0.6 of peak"):
        assert text in page, text


# ---- XLSX -----------------------------------------------------------------------------------

# the what-if workbook (formulas recomputed per example) is tested in test_xlsx_whatif.py


def test_xlsx_without_openpyxl_is_a_config_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "openpyxl", None)
    with pytest.raises(ConfigError, match="openpyxl"):
        write_xlsx(make_sheet(), str(tmp_path / "x.xlsx"))
