"""Buy vs rent (issue 30, point 3): the edge device against the cheapest rental that meets the same per-token
latency, energy at the electricity price, and the months after which buying is cheaper; every example's sheet
has its four sections (hardware, cost, SLA, fault plan), the edge example too."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.plan.buy import DEFAULT_ELECTRICITY_USD_PER_KWH, edge_buy_vs_rent
from sizeup.plan.cost import HOURS_PER_MONTH
from sizeup.plan.recommend import plan_scenario
from sizeup.plan.scenario import load_scenario, parse_scenario
from sizeup.plan.sheet import build_sheet
from tests.plan.example_sheets import EXAMPLES, NAMES, example_sheet

CATALOG = load_catalog(include_user=False)
EDGE = {"name": "e", "model": "llama-3.2-1b", "task": "edge", "traffic": {"prompt_tokens": 256, "output_tokens": 128},
        "edge": {"device": "jetson-orin-nano-8gb", "latency_s": 0.1, "price_usd": 249},
        "budget": {"electricity_usd_per_kwh": 0.30}}


def test_edge_break_even_against_the_cheapest_rental_that_meets_the_latency():
    result = plan_scenario(parse_scenario(EDGE), CATALOG)
    buy = result.buy
    assert buy.price_usd == 249 and "edge.price_usd" in buy.price_note
    assert buy.electricity_usd_per_kwh == 0.30
    assert buy.energy_usd_per_month == pytest.approx(buy.power_w / 1000 * HOURS_PER_MONTH * 0.30)
    assert buy.rent is not None and buy.rent_usd_per_month > buy.energy_usd_per_month
    assert buy.break_even_months == pytest.approx(249 / (buy.rent_usd_per_month - buy.energy_usd_per_month))
    sheet = build_sheet(result)
    cells = sheet.cells()
    assert cells["break_even_months"].value == pytest.approx(round(buy.break_even_months, 2))
    assert "pays for itself after" in sheet.headline.text


def test_the_rental_is_the_cheapest_that_meets_the_latency():
    """No cheaper single-GPU offer among those tried runs the model fast enough."""
    result = plan_scenario(parse_scenario(EDGE), CATALOG)
    hourly = result.buy.rent_usd_per_month / HOURS_PER_MONTH
    assert f"${hourly:,.3f}/h" in result.buy.rent_note
    strict = replace(result.scenario, edge=replace(result.scenario.edge, latency_s=1e-5))
    none = edge_buy_vs_rent(replace(result, scenario=strict), CATALOG)
    assert none.rent is None and none.break_even_months is None and "no rental" in none.text


def test_electricity_defaults_to_a_stated_assumption():
    data = {k: v for k, v in EDGE.items() if k != "budget"}
    buy = plan_scenario(parse_scenario(data), CATALOG).buy
    assert buy.electricity_usd_per_kwh == DEFAULT_ELECTRICITY_USD_PER_KWH and "assumed" in buy.electricity_note


def test_electricity_is_not_read_by_jobs():
    from sizeup.errors import ConfigError

    with pytest.raises(ConfigError, match="electricity_usd_per_kwh' does not apply to task 'finetune'"):
        parse_scenario({"model": "llama-3.1-8b", "task": "finetune", "job": {"tokens": 1000},
                        "budget": {"electricity_usd_per_kwh": 0.2}})


def test_catalog_purchase_prices_price_the_edge_device_and_the_fleet():
    data = {**EDGE, "edge": {k: v for k, v in EDGE["edge"].items() if k != "price_usd"}}
    buy = plan_scenario(parse_scenario(data), CATALOG).buy
    assert buy.price_usd is not None and ("MSRP" in buy.price_note or "street" in buy.price_note)
    scenario = load_scenario(EXAMPLES / "api-70b-p99-ttft.yaml")
    result = plan_scenario(scenario, CATALOG)
    if result.buy is not None:  # the chosen device has a purchase price in the catalog
        gpus = result.chosen.gpus * result.chosen.replicas.with_redundancy
        assert str(gpus) in result.buy.what and result.buy.rent_usd_per_month == pytest.approx(result.chosen.cost_usd)
        assert "Buy vs rent" in [s.title for s in build_sheet(result).sections]


@pytest.mark.parametrize("name", NAMES)
def test_every_example_has_the_four_sections(name):
    if name == "vision-inspection":
        pytest.importorskip("torch")
    _, sheet = example_sheet(name)
    titles = [s.title for s in sheet.sections]
    for title in ("Hardware selection", "Cost budget", "SLA commitment", "Fault plan"):
        assert title in titles, (name, title)
    assert all(s.cells or s.table_rows for s in sheet.sections if s.title in ("Cost budget", "Fault plan"))
