"""The UI in a real browser: Playwright driving the system Chromium (/usr/bin/chromium).

Screenshots go to tests/ui/artifacts/ (ignored by git) as test artifacts.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("no system Chromium at /usr/bin/chromium (install it from the OS packages)", allow_module_level=True)
pytest.importorskip("playwright.sync_api")
uvicorn = pytest.importorskip("uvicorn")
from playwright.sync_api import expect  # noqa: E402

from sizeup.ui.app import create_app  # noqa: E402
from tests.ui.server import serve  # noqa: E402

ARTIFACTS = Path(__file__).parent / "artifacts"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serve(create_app(tmp_path_factory.mktemp("ui"))) as url:
        yield url


@pytest.fixture()
def page(browser):
    ARTIFACTS.mkdir(exist_ok=True)
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    pg = context.new_page()
    yield pg
    context.close()


def test_estimate_opens_with_figures_and_follows_the_device(server, page):
    page.goto(f"{server}/estimate")
    expect(page.locator("#figures h2")).to_contain_text("RTX 4090")
    expect(page.locator("#fits")).to_contain_text("usable")
    expect(page.locator("#tps")).to_be_visible()
    assert page.locator("#memory-chart svg").count() == 1
    before = page.locator("#figures h2").inner_text()
    tps_before = page.locator("#tps").inner_text()
    page.screenshot(path=str(ARTIFACTS / "estimate-4090.png"), full_page=True)
    page.select_option("#device", "h100-sxm-80gb")
    expect(page.locator("#figures h2")).to_contain_text("H100")
    assert page.locator("#figures h2").inner_text() != before
    assert page.locator("#tps").inner_text() != tps_before
    page.screenshot(path=str(ARTIFACTS / "estimate-h100.png"), full_page=True)


def test_a_bad_batch_shows_the_message_and_the_page_recovers(server, page):
    page.goto(f"{server}/estimate")
    page.fill("#batch", "-3")
    page.dispatch_event("#batch", "change")
    expect(page.locator("#error")).to_contain_text("--batch -3")
    page.fill("#batch", "4")
    page.dispatch_event("#batch", "change")
    expect(page.locator("#figures .sub")).to_contain_text("batch 4")


def test_the_plan_form_shows_and_sends_only_the_tasks_fields(server, page):
    """A batch job: no users, rate, latency targets shown or sent (the form used to send users=20 and engine=vllm
    with every job); an edge board: the per-token target, no TTFT; a fine-tune: no engine or lengths."""
    page.goto(f"{server}/plan")
    expect(page.locator("#plan-users")).to_be_visible()
    page.select_option("#plan-task", "batch")
    for hidden in ("#plan-users", "#plan-ttft", "#plan-tpot"):
        expect(page.locator(hidden)).to_be_hidden()
        expect(page.locator(hidden)).to_be_disabled()
    for shown in ("#plan-tokens", "#plan-prompt", "#plan-output", "#plan-engine", "#plan-devices"):
        expect(page.locator(shown)).to_be_visible()
    page.fill("#plan-tokens", "1e8")
    page.fill("#plan-devices", "h100")
    with page.expect_request("**/plan/result") as sent:
        page.click("#plan-submit")
    body = sent.value.post_data or ""
    assert 'name="tokens"' in body and 'name="users"' not in body and 'name="ttft_p95"' not in body
    assert 'name="engine"' in body  # a batch job's engine (empty: the task's default)
    expect(page.locator("#verdict")).to_contain_text("scenario", timeout=60_000)
    expect(page.locator("#error")).to_have_count(0)
    page.select_option("#plan-task", "edge")
    expect(page.locator("#plan-tpot")).to_be_visible()
    expect(page.locator("#plan-ttft")).to_be_hidden()
    page.select_option("#plan-task", "finetune")
    for hidden in ("#plan-engine", "#plan-prompt", "#plan-output", "#plan-users"):
        expect(page.locator(hidden)).to_be_hidden()
    page.select_option("#plan-task", "chat")
    expect(page.locator("#plan-users")).to_be_enabled()


def test_the_plan_form_produces_a_sheet_and_an_xlsx_download(server, page):
    openpyxl = pytest.importorskip("openpyxl")
    page.goto(f"{server}/plan")
    page.fill("#plan-users", "20")
    page.click("#plan-submit")
    expect(page.locator("#verdict")).to_contain_text("scenario", timeout=60_000)
    frame = page.frame_locator("#sheet-frame")
    expect(frame.locator("body")).to_contain_text("llama-3.1-8b", timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "plan.png"), full_page=True)
    with page.expect_download() as info:
        page.click("#dl-xlsx")
    data = Path(info.value.path()).read_bytes()
    assert data[:2] == b"PK"
    book = openpyxl.load_workbook(io.BytesIO(data))
    assert book.sheetnames and book[book.sheetnames[0]].max_row > 1


def test_compare_page_shows_a_sorted_table_and_a_chart(server, page):
    page.goto(f"{server}/compare?model=llama-3.1-8b&quant=q4_k_m&kind=gpu&vendor=nvidia")
    rows = page.locator("#compare-table tr")
    expect(rows.nth(1)).to_be_visible()
    assert rows.count() > 5 and page.locator("#compare-chart svg").count() == 1
    page.screenshot(path=str(ARTIFACTS / "compare.png"), full_page=True)
