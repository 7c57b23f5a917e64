"""Each example's HTML sheet in headless Chromium at 1280×800: the headline is visible in the first
screen (issue 19). Screenshots are kept as test artifacts in $SIZEUP_ARTIFACTS_DIR (default
tmp/artifacts/ at the repository root), under screenshots/."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sizeup.report.html import render_html
from tests.plan.example_sheets import NAMES, example_sheet

CHROMIUM = "/usr/bin/chromium"
VIEWPORT = {"width": 1280, "height": 800}
ARTIFACTS = Path(os.environ.get("SIZEUP_ARTIFACTS_DIR", Path(__file__).resolve().parents[2] / "tmp" / "artifacts"))

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM}")


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.mark.parametrize("name", NAMES)
def test_the_headline_is_in_the_first_screen(name, browser, tmp_path):
    _, sheet = example_sheet(name)
    page_file = tmp_path / f"{name}.html"
    page_file.write_text(render_html(sheet), encoding="utf-8")
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(page_file.as_uri())
        headline = page.locator("#headline")
        assert headline.count() == 1 and headline.is_visible()
        box = headline.bounding_box()
        assert box is not None
        assert 0 <= box["y"] and box["y"] + box["height"] <= VIEWPORT["height"], box  # wholly in the first screen
        assert 0 <= box["x"] and box["x"] + box["width"] <= VIEWPORT["width"], box
        text = headline.inner_text()
        assert sheet.headline.device in text
        if sheet.headline.cost_usd is not None:
            assert sheet.headline.pricing_basis in text
        out = ARTIFACTS / "screenshots"
        out.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(out / f"{name}.png"))
    finally:
        page.close()
