"""The headline (issue 19): one pricing basis for the choice, every runner-up and every rejection; the
headline's cost is the cost section's cell on that basis; sections fit the task."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.plan.cost import pricing_basis
from sizeup.plan.headline import COST_KEYS
from sizeup.plan.recommend import plan_scenario
from sizeup.plan.scenario import load_scenario, parse_scenario
from sizeup.plan.sheet import build_sheet
from sizeup.report.terminal import render_sheet
from tests.plan.example_sheets import EXAMPLES, NAMES, example_sheet

CATALOG = load_catalog(include_user=False)


@pytest.mark.parametrize("name", NAMES)
def test_headline_cost_is_the_cost_sections_on_the_stated_basis(name):
    result, sheet = example_sheet(name)
    h = sheet.headline
    assert h is not None and h.meets == result.meets
    if result.scenario.task == "edge":  # a device bought once: its cost section is buy vs rent, no monthly bill
        assert h.cost_usd is None and h.period == "device"
        cost = next(s for s in sheet.sections if s.title == "Cost budget")
        assert {"buy_price", "buy_power", "electricity_price", "rent_monthly", "break_even_months"} <= \
            {c.key for c in cost.cells}
        return
    chosen = result.chosen
    assert h.pricing_basis == chosen.pricing_basis
    assert h.pricing_basis in ("owned", pricing_basis(result.scenario))
    assert h.cost_key == COST_KEYS[h.period][h.pricing_basis]
    cost_section = next(s for s in sheet.sections if s.title == "Cost budget")
    cell = next(c for c in cost_section.cells if c.key == h.cost_key)
    assert cell.value == pytest.approx(h.cost_usd) == pytest.approx(chosen.cost_usd)
    assert h.costs_by_basis[h.pricing_basis] == pytest.approx(h.cost_usd)
    if h.budget_usd:
        assert h.budget_share == pytest.approx(h.cost_usd / h.budget_usd)
    data = sheet.to_dict()["headline"]
    key = "monthly_cost_usd" if h.period == "month" else "job_cost_usd"
    assert data[key] == pytest.approx(cell.value)
    for field in ("pricing_basis", "budget_share", "device", "count", "provider", "region", "engine", "format",
                  "sla", "margin", "assumptions"):
        assert field in data


@pytest.mark.parametrize("name", NAMES)
def test_runners_up_and_rejections_use_the_headline_basis(name):
    result, sheet = example_sheet(name)
    if result.chosen is None or sheet.headline.cost_usd is None:
        return
    basis = result.chosen.pricing_basis
    hardware = next(s for s in sheet.sections if s.title == "Hardware selection")
    period = "/month" if sheet.headline.period == "month" else "per job"
    for candidate, row in zip(result.ranked[1:], hardware.table_rows):
        assert candidate.pricing_basis == basis or candidate.pricing_basis in row[1]
        assert period in row[1]  # every cost carries its period
        shown = float(re.search(r"\$([\d,.]+)", row[1]).group(1).replace(",", ""))
        assert shown == pytest.approx(candidate.cost_usd, rel=0.01, abs=0.01)
    for r in result.rejected:
        if "costs at least" in r.reason or "over the budget" in r.reason:
            assert basis in r.reason or "owned" in r.reason, r.reason


def test_reserved_pricing_when_the_scenario_asks_for_it():
    scenario = load_scenario(EXAMPLES / "team-api-200-users.yaml")
    scenario = replace(scenario, budget=replace(scenario.budget, pricing="reserved-1y"))
    result = plan_scenario(scenario, CATALOG)
    sheet = build_sheet(result)
    h = sheet.headline
    assert h.pricing_basis == "reserved-1y" and h.cost_key == "monthly_reserved"
    assert sheet.cells()["monthly_reserved"].value == pytest.approx(h.cost_usd)
    assert h.costs_by_basis["on-demand"] > h.cost_usd  # the others are shown beside it
    for r in result.rejected:
        if "costs at least" in r.reason:
            assert "reserved-1y" in r.reason


def test_a_quick_plan_names_provider_region_and_its_traffic_assumptions():
    scenario = parse_scenario({"name": "q", "model": "llama-3.1-8b", "task": "chat",
                               "traffic": {"users": 50, "prompt_tokens": 800, "output_tokens": 250}},
                              source="command line")
    sheet = build_sheet(plan_scenario(scenario, CATALOG))
    h = sheet.headline
    assert h.provider and h.region and h.provider in h.text and h.region in h.text
    assert any("50 users × 20 requests/hour" in a and "800" in a and "250" in a for a in h.assumptions)
    assert any(a.startswith("regions:") for a in h.assumptions)


def test_sections_fit_the_task():
    _, edge = example_sheet("jetson-edge")
    text = render_sheet(edge)
    assert "Device" in [s.title for s in edge.sections] and "power drawn at full load" in text
    _, vision = example_sheet("vision-inspection")
    text = render_sheet(vision)
    assert "TTFT" not in text and "continuous batching" not in text and "images per second" in text
    _, job = example_sheet("team-lora-finetune")
    hardware = next(s for s in job.sections if s.title == "Hardware selection")
    assert "latency" not in " ".join(hardware.table_headers) and "run time" in hardware.table_headers
    assert any(c.key == "method" for c in hardware.cells)
    sla = next(s for s in job.sections if s.title == "SLA commitment")
    assert [c.label for c in sla.cells] == ["run time"]
    cells = job.cells()
    # LoRA rank 16 on q_proj/v_proj of Llama-3.1-8B: 32 layers × (16·(4096+4096) + 16·(4096+1024)) adapter weights
    assert cells["checkpoint_bytes"].value == 32 * (16 * 8192 + 16 * 5120) * 14
    assert "checkpoint_interval" in cells


def test_owned_hardware_has_a_spare_only_when_asked():
    result, sheet = example_sheet("personal-7b-chat")  # one owned card, redundancy not asked for
    assert result.chosen.owned and result.chosen.replicas.with_redundancy == result.chosen.replicas.for_load
    assert "N+1" not in render_sheet(sheet)
    scenario = load_scenario(EXAMPLES / "personal-7b-chat.yaml")
    owned = replace(scenario.constraints.owned[0], count=2)
    asked = replace(scenario, constraints=replace(scenario.constraints, owned=(owned,), redundancy=True))
    chosen = plan_scenario(asked, CATALOG).chosen
    assert chosen.owned and chosen.replicas.with_redundancy == chosen.replicas.for_load + 1


def test_an_edge_plan_quotes_the_device_price_the_scenario_gives():
    scenario = load_scenario(EXAMPLES / "jetson-edge.yaml")
    priced = replace(scenario, edge=replace(scenario.edge, price_usd=249.0))
    sheet = build_sheet(plan_scenario(priced, CATALOG))
    assert sheet.headline.device_price_usd == 249.0 and "$249" in sheet.headline.text
    assert sheet.cells()["buy_price"].value == 249.0
    _, unpriced = example_sheet("jetson-edge")
    price = unpriced.cells()["buy_price"].value  # the catalog's dated price of the device, else unknown
    if unpriced.headline.device_price_usd is None:
        assert "unknown" in unpriced.headline.text and price == "unknown"
    else:
        assert price == unpriced.headline.device_price_usd and f"{price:,.0f}" in unpriced.headline.text
