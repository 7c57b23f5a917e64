"""What the browser tests of the UI share: the system Chromium driven by Playwright (each test module skips
itself when either is missing)."""

from __future__ import annotations

import pytest

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser():
    """One Chromium per test module."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()
