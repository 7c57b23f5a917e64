"""Every page in Chromium at 1280×800 (desktop) and 390×844 (a phone): it renders its result, nothing is wider
than the viewport (document.scrollingElement.scrollWidth <= innerWidth), no Python value (None, a dict, a long
float) reaches the page, and a screenshot goes to tests/ui/artifacts/ (ignored by git) for a person to look at.

The run store holds a real run: mlp_conv_net measured on this CPU (sizeup.api.measure), and a serving run imported
from the GuideLLM fixture of tests/measure/importers, so the Runs pages show both kinds.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("no system Chromium at /usr/bin/chromium (install it from the OS packages)", allow_module_level=True)
pytest.importorskip("playwright.sync_api")
pytest.importorskip("uvicorn")
from playwright.sync_api import expect  # noqa: E402

from sizeup.ui.app import create_app  # noqa: E402
from tests.ui.server import serve  # noqa: E402

ARTIFACTS = Path(__file__).parent / "artifacts"
VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
GUIDELLM = Path(__file__).parents[1] / "measure" / "importers" / "guidellm_benchmarks.json"
RUN_POINTS: dict[int, int] = {}
RAW = re.compile(r"\bNone\b|\{'|\d\.\d{9,}|\bnan\b|Traceback")
"""What a page must never show: Python's None, a dict's repr, a float printed to 9+ decimals, NaN, a traceback."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A run store with a measured model run and an imported serving run; its ids."""
    pytest.importorskip("torch")
    from sizeup import api
    from sizeup.cli.main import main

    db = str(tmp_path_factory.mktemp("store") / "runs.sqlite")
    sweep = api.measure("sizeup.examples.zoo:mlp_conv_net", inputs=("1x3x32x32",), batches=(1, 2, 4), budget=5,
                        db=db).sweep
    measured = sweep.run_id
    assert len(sweep.points) >= 2, "the time budget measured fewer than two batches: no line to draw"
    RUN_POINTS[measured] = len(sweep.points)  # a busy machine may measure fewer than all three in the budget
    assert main(["runs", "import", str(GUIDELLM), "--model", "llama-3.1-8b", "--device-type", "h100",
                 "--engine", "vllm", "--db", db]) == 0
    return db, measured, measured + 1


@pytest.fixture(scope="module")
def server(tmp_path_factory, runs):
    old = os.environ.get("SIZEUP_DB")
    os.environ["SIZEUP_DB"] = runs[0]  # the workers read this store
    try:
        with serve(create_app(tmp_path_factory.mktemp("ui"), time_limit_s=120)) as url:
            yield url
    finally:
        os.environ.pop("SIZEUP_DB") if old is None else os.environ.__setitem__("SIZEUP_DB", old)


@pytest.fixture(params=list(VIEWPORTS))
def page(request, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    context = browser.new_context(viewport=VIEWPORTS[request.param])
    pg = context.new_page()
    pg.viewport_name = request.param
    yield pg
    context.close()


def check(page, name: str) -> None:
    """No horizontal overflow, no raw Python value in the text; the screenshot kept."""
    expect(page.locator(".htmx-request")).to_have_count(0)  # (wait_for_function's eval is refused by the CSP)
    page.screenshot(path=str(ARTIFACTS / f"{name}-{page.viewport_name}.png"), full_page=True)
    width, inner = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    assert width <= inner, f"{name} at {page.viewport_name}: {width} px wide in a {inner} px viewport"
    text = page.locator("main").inner_text()
    assert not RAW.search(text), RAW.search(text).group()


def test_start_page_lists_what_runs_on_a_device(server, page):
    page.goto(f"{server}/")
    expect(page.locator("h1")).to_contain_text("I have a")
    check(page, "start-empty")
    page.select_option("#device", "rtx-4060-ti-16gb")
    page.click("#fit-submit")
    expect(page.locator("#fit-table tbody tr").first).to_be_visible(timeout=30_000)
    assert page.locator("#fit-table tbody tr").count() >= 10
    assert "4060 Ti" in page.locator("#result h2").inner_text()
    check(page, "start-4060ti")
    page.locator("#fit-table tbody a").first.click()  # a row opens its estimate
    expect(page.locator("#figures h2")).to_contain_text("RTX 4060 Ti", timeout=30_000)


def test_estimate_page(server, page):
    page.goto(f"{server}/estimate")
    expect(page.locator("#fits")).to_contain_text("usable")
    assert page.locator("#memory-chart svg").count() == 1
    assert page.locator("#quant option").count() >= 4  # formats llama.cpp loads on the card, a choice
    assert page.locator("#backing li").count() >= 2  # what each low – high range rests on
    assert re.search(r"total\s+[\d.]+ GiB \([\d.]+ GiB – [\d.]+ GiB\)", page.locator("#memory-table").inner_text())
    check(page, "estimate")


def test_a_typical_fit_whose_range_does_not_says_may_not_fit(server, page):
    """The three-way verdict the text and JSON carry (workload/device_fit.py fit_verdict), with its note."""
    page.goto(f"{server}/estimate?model=qwen3-8b&device=rtx-3080-10gb&engine=llama.cpp&quant=q8_0&prompt=64&output=300")
    verdict = page.locator("#fits")
    expect(verdict).to_contain_text("May not fit", timeout=30_000)
    expect(verdict).to_contain_text("the high end of the memory range")
    assert verdict.get_attribute("data-fit") == "may not fit"
    assert "warn" in verdict.get_attribute("class")


def test_a_model_that_does_not_fit_shows_what_would_and_one_click_applies_it(server, page):
    page.goto(f"{server}/estimate?model=llama-3.1-70b&device=rtx-4090&engine=llama.cpp&quant=q8_0")
    expect(page.locator("#fits")).to_contain_text("Does not fit")
    alternatives = page.locator("#would-fit a.apply")
    assert alternatives.count() >= 1
    assert "request failed" not in page.locator("main").inner_text()
    assert page.locator("#fit-link").get_attribute("href") == "/?device=rtx-4090"  # the models that do run there
    check(page, "estimate-does-not-fit")
    change = json.loads(alternatives.first.get_attribute("data-set"))
    assert set(change) <= {"quant", "gpus", "context", "batch"}
    alternatives.first.click()
    expect(page.locator("#fits")).to_contain_text("Fits", timeout=30_000)
    name, value = next(iter(change.items()))
    assert page.locator(f"#{name}").input_value() == value  # the form now holds the change


def test_the_format_list_follows_the_engine_and_device(server, page):
    page.goto(f"{server}/estimate?model=llama-3.1-8b&device=h100-sxm-80gb&engine=vllm&quant=bf16")
    expect(page.locator("#figures h2")).to_contain_text("H100")
    formats = page.locator("#quant option").all_inner_texts()
    assert "fp8" in formats and "q4_k_m" not in formats
    page.select_option("#engine", "llama.cpp")
    expect(page.locator("#quant option[value=q4_k_m]")).to_have_count(1, timeout=30_000)


def test_batch_slider_sets_the_batch(server, page):
    if page.viewport_name == "phone":
        pytest.skip("one viewport is enough for the slider")
    page.goto(f"{server}/estimate")
    slider = page.locator('input.log2[data-for="batch"]')
    slider.fill("4")  # 2**4
    slider.dispatch_event("change")
    expect(page.locator("#figures .sub")).to_contain_text("batch 16", timeout=30_000)
    assert page.locator("#batch").input_value() == "16"


def test_compare_pages_sorts_and_labels(server, page):
    page.goto(f"{server}/compare?model=llama-3.1-8b&kind=gpu")
    rows = page.locator("#compare-table tbody tr")
    expect(rows.first).to_be_visible(timeout=30_000)
    assert rows.count() == 25
    legend = page.locator("#compare-chart svg").text_content()
    assert "cheapest per million tokens" in legend and "(chosen)" not in legend
    check(page, "compare")
    page.click("#compare-table th a[data-sort=usd_per_million_tokens]")
    expect(page.locator("#compare-table th.sorted")).to_contain_text("$ per million tokens")
    prices = [float(t.replace("$", "").replace(",", "")) for t in
              page.locator("#compare-table tbody tr td:nth-child(7)").all_inner_texts() if t.startswith("$")]
    assert prices == sorted(prices) and len(prices) > 3
    page.click("#next-page")
    expect(page.locator(".pager").first).to_contain_text("Devices 26–")


def test_train_page(server, page):
    page.goto(f"{server}/train?model=llama-3.1-8b&device=rtx-4090&method=qlora&framework=unsloth&recompute=full"
              "&targets=all-linear&rank=32")
    expect(page.locator("#training h2")).to_contain_text("qlora")
    assert page.locator("#memory-chart svg").count() == 1 and page.locator("#time-chart svg").count() == 1
    assert "unsloth" in page.locator("#training .sub").inner_text()
    check(page, "train")
    page.select_option("#method", "compare")
    expect(page.locator("#train-table tbody tr")).to_have_count(3, timeout=30_000)
    check(page, "train-methods")


def test_train_that_does_not_fit_offers_changes(server, page):
    page.goto(f"{server}/train?model=llama-3.1-8b&device=rtx-4090&method=qlora&framework=hf")
    expect(page.locator("#fits")).to_contain_text("Does not fit")
    assert page.locator("#would-fit li").count() >= 1
    check(page, "train-does-not-fit")


def test_flops_page_counts_a_zoo_model_and_draws_its_roofline(server, page):
    page.goto(f"{server}/flops")
    page.select_option("#zoo", "c2f")
    assert page.locator("#input").input_value() == "1x64x64x64"
    page.click("#flops-submit")
    expect(page.locator("#flops h2")).to_contain_text("c2f", timeout=90_000)
    assert page.locator("#roofline-chart svg circle.op").count() > 5
    check(page, "flops")


def test_flops_page_counts_an_uploaded_onnx_graph_by_its_name(server, page, tmp_path):
    pytest.importorskip("onnx")
    from tests.ui.onnx_files import tiny_mlp_onnx

    path = tmp_path / "tiny-mlp.onnx"
    path.write_bytes(tiny_mlp_onnx())
    page.goto(f"{server}/flops")
    page.set_input_files("#file", str(path))
    page.click("#flops-submit")
    expect(page.locator("#error")).to_contain_text("tiny-mlp.onnx: unbound symbolic dimension", timeout=60_000)
    assert "Its sizes" in page.locator("#error").inner_text()  # the form's field, not a CLI flag
    page.fill("#dims", "batch=2")
    page.click("#flops-submit")
    expect(page.locator("#flops h2")).to_contain_text("tiny-mlp.onnx", timeout=60_000)
    assert "uploads" not in page.locator("main").inner_text()


def test_plan_page(server, page):
    page.goto(f"{server}/plan")
    page.click("#plan-submit")
    expect(page.locator("#verdict")).to_contain_text("scenario", timeout=60_000)
    check(page, "plan")


def test_runs_pages_are_readable(server, page, runs):
    page.goto(f"{server}/runs")
    expect(page.locator("#runs-table tbody tr")).to_have_count(2)
    check(page, "runs")
    page.goto(f"{server}/runs/{runs[1]}")
    expect(page.locator("#points-table tbody tr")).to_have_count(RUN_POINTS[runs[1]])
    assert page.locator("#run-chart svg polyline").count() >= 2  # measured and predicted
    config = page.locator("#config-table").inner_text()
    assert "1×3×32×32" in config
    check(page, "run-model")
    page.goto(f"{server}/runs/{runs[2]}")
    expect(page.locator("#terms-table")).to_contain_text("TTFT")
    check(page, "run-serving")


def test_an_uploaded_config_is_shown_by_its_name(server, page, tmp_path):
    path = tmp_path / "my-tiny-llama.json"
    path.write_text(json.dumps({"model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632,
                                "num_hidden_layers": 22, "num_attention_heads": 32, "num_key_value_heads": 4,
                                "vocab_size": 32000, "max_position_embeddings": 2048, "torch_dtype": "bfloat16"}))
    page.goto(f"{server}/estimate")
    page.set_input_files("#file", str(path))
    expect(page.locator("#figures h2")).to_contain_text("my-tiny-llama.json", timeout=30_000)
    assert not re.search(r"\b[0-9a-f]{16}\b", page.locator("#figures").inner_text())  # no storage hash


def test_the_favicon_is_served(server, page):
    page.goto(f"{server}/estimate")
    icon = page.locator("link[rel=icon]").get_attribute("href")
    assert page.request.get(f"{server}{icon}").status == 200
    assert page.request.get(f"{server}/favicon.ico").status == 200
