"""Costs as billed (issue 30, point 2): the month from the traffic profile, the autoscaled fleet between its
floor and its peak, the mixed fleet, owned cards with a rented burst, and the cheapest per region group."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.plan.cost import HOURS_PER_MONTH
from sizeup.plan.fleet import fleet_for, month_levels, owned_mix, replicas_at
from sizeup.plan.recommend import plan_scenario
from sizeup.plan.regions import region_group
from sizeup.plan.scenario import parse_scenario
from sizeup.plan.sheet import build_sheet

CATALOG = load_catalog(include_user=False)


def _traffic(**traffic):
    return parse_scenario({"model": "llama-3.1-8b", "task": "api", "traffic": traffic}).traffic


def test_levels_cover_the_month_and_keep_the_days_requests():
    t = _traffic(requests_per_day=100_000, peak_hour_share=0.12, peak_hours_per_day=4)
    levels, method = month_levels(t)
    assert sum(lv.hours for lv in levels) == pytest.approx(HOURS_PER_MONTH)
    assert sum(lv.hours * lv.requests_per_s for lv in levels) == pytest.approx(t.base_requests_per_s * HOURS_PER_MONTH)
    assert max(lv.requests_per_s for lv in levels) == pytest.approx(t.peak_requests_per_s)
    assert "4 h at the busiest hour" in method


def test_a_profile_sets_each_hour():
    weights = [1] * 8 + [4] * 10 + [2] * 6
    t = _traffic(requests_per_day=240_000, profile=weights)
    levels, _ = month_levels(t)
    assert len(levels) == 24
    rates = sorted({round(lv.requests_per_s, 9) for lv in levels})
    assert rates[-1] == pytest.approx(t.peak_requests_per_s)
    assert rates[0] == pytest.approx(t.peak_requests_per_s / 4)


def test_events_are_billed_for_their_hours():
    t = _traffic(requests_per_day=100_000, peak_hour_share=0.1, peak_factor=2, peak_hours_per_day=2,
                 burst_hours_per_month=10)
    levels, method = month_levels(t)
    events = [lv for lv in levels if "events" in lv.label]
    assert sum(lv.hours for lv in events) == pytest.approx(10)
    assert events[0].requests_per_s == pytest.approx(t.peak_requests_per_s)
    assert "events (×2) for 10 h a month" in method


def test_too_many_peak_hours_are_refused():
    t = _traffic(requests_per_day=100_000, peak_hour_share=0.2, peak_hours_per_day=6)
    with pytest.raises(ConfigError, match="peak_hours_per_day"):
        month_levels(t)


def test_fleet_bills_the_autoscaled_instance_hours():
    offer = CATALOG.offers["aws-g6-xlarge"]
    t = _traffic(requests_per_day=500_000, peak_hour_share=0.15, peak_hours_per_day=2)
    levels, method = month_levels(t)
    fleet = fleet_for(levels, method, 1.0, 1, offer, 1, spot_allowed=False)
    expected = sum(lv.hours * (replicas_at(lv.requests_per_s, 1.0) + 1) for lv in levels)
    assert fleet.instance_hours == pytest.approx(expected)
    assert fleet.costs["on-demand"] == pytest.approx(expected * offer.on_demand_usd_per_hour)
    # not peak × 730 h: the quiet hours run fewer replicas
    assert fleet.costs["on-demand"] < fleet.peak_instances * HOURS_PER_MONTH * offer.on_demand_usd_per_hour
    assert fleet.floor_instances < fleet.peak_instances


def test_mixed_fleet_reserves_the_floor_and_bursts_the_rest():
    offer = CATALOG.offers["gcp-g2-standard-4"]
    assert offer.reserved_1y_usd_per_hour and offer.spot_usd_per_hour
    t = _traffic(requests_per_day=2_000_000, peak_hour_share=0.1, peak_hours_per_day=6)
    levels, method = month_levels(t)
    for spot in (False, True):
        fleet = fleet_for(levels, method, 2.0, 1, offer, 1, spot_allowed=spot)
        burst = offer.spot_usd_per_hour if spot else offer.on_demand_usd_per_hour
        floor = fleet.floor_instances * HOURS_PER_MONTH
        assert fleet.costs["mixed"] == pytest.approx(floor * offer.reserved_1y_usd_per_hour
                                                     + (fleet.instance_hours - floor) * burst)
        assert fleet.burst_basis == ("spot" if spot else "on-demand")
    assert fleet.costs["reserved-1y"] == pytest.approx(fleet.peak_instances * HOURS_PER_MONTH
                                                       * offer.reserved_1y_usd_per_hour)


def test_owned_cards_carry_the_base_and_rent_the_peak():
    offer = CATALOG.offers["runpod-rtx-4090-community"]
    t = _traffic(requests_per_day=400_000, peak_hour_share=0.1, peak_hours_per_day=3)
    levels, _ = month_levels(t)
    mix = owned_mix(levels, 1.0, 2, 50.0, (0, 1), offer, 1, (offer.on_demand_usd_per_hour, "on-demand"))
    peak = replicas_at(t.peak_requests_per_s, 1.0)
    assert peak + 1 > 2  # two owned cards cannot carry the peak alone
    hours = sum(lv.hours * max(0, replicas_at(lv.requests_per_s, 1.0) + 1 - 2) for lv in levels)
    assert mix.owned_replicas == 2 and mix.rented_instance_hours == pytest.approx(hours)
    assert mix.cost_usd == pytest.approx(2 * 50.0 + hours * offer.on_demand_usd_per_hour)
    assert owned_mix(levels, 1.0, 2, 50.0, (0, 1), None, 1, (0.0, "")) is None


def test_a_serving_plan_costs_its_autoscaled_profile():
    scenario = parse_scenario({"name": "t", "model": "llama-3.1-8b", "task": "api",
                               "traffic": {"requests_per_day": 3_000_000, "peak_hour_share": 0.12,
                                           "peak_hours_per_day": 4, "prompt_tokens": 800, "output_tokens": 200},
                               "sla": {"ttft_p95_s": 1.5, "tpot_p95_s": 0.06},
                               "constraints": {"devices": ["l4", "a10g", "l40s"], "providers": ["aws", "gcp"]}})
    result = plan_scenario(scenario, CATALOG)
    chosen = result.chosen
    fleet = chosen.detail["fleet"]
    assert chosen.monthly.on_demand_usd == pytest.approx(fleet["instance_hours"] * chosen.offer.on_demand_usd_per_hour)
    assert chosen.cost_usd == pytest.approx(chosen.monthly.on_demand_usd)
    full_time = chosen.monthly.instances * HOURS_PER_MONTH * chosen.offer.on_demand_usd_per_hour
    assert chosen.cost_usd < full_time  # the quiet hours are not billed at the peak fleet
    sheet = build_sheet(result)
    cells = sheet.cells()
    assert cells["monthly_on_demand"].value == pytest.approx(chosen.cost_usd)
    assert cells["replicas_floor"].value == chosen.detail["floor_replicas"] < cells["replicas"].value
    assert sheet.headline.fleet.startswith("autoscaled")


def test_mixed_pricing_is_searched_and_quoted():
    scenario = parse_scenario({"name": "t", "model": "llama-3.1-8b", "task": "api",
                               "traffic": {"requests_per_day": 3_000_000, "peak_hour_share": 0.12,
                                           "peak_hours_per_day": 4},
                               "budget": {"pricing": "mixed"},
                               "constraints": {"devices": ["l4"], "providers": ["gcp"]}})
    result = plan_scenario(scenario, CATALOG)
    chosen = result.chosen
    assert chosen.pricing_basis == "mixed" and chosen.cost_usd == pytest.approx(chosen.monthly.mixed_usd)
    sheet = build_sheet(result)
    assert sheet.headline.cost_key == "monthly_mixed"
    assert sheet.cells()["monthly_mixed"].value == pytest.approx(chosen.cost_usd)
    assert "reserved for a year" in sheet.headline.fleet


def test_owned_cards_with_a_rented_burst_are_a_searched_option():
    scenario = parse_scenario({"name": "t", "model": "qwen2.5-7b", "task": "chat",
                               "traffic": {"users": 4000, "requests_per_user_per_hour": 20},
                               "sla": {"ttft_p95_s": 3.0, "tpot_p95_s": 0.1},
                               "constraints": {"devices": ["rtx-4090"], "engines": ["vllm"],
                                               "quantizations": ["awq-int4"], "max_gpus": 1,
                                               "owned": [{"device": "rtx-4090", "count": 1, "purchase_usd": 1800}]}})
    result = plan_scenario(scenario, CATALOG)
    chosen = result.chosen
    assert chosen.detail["owned_replicas"] == 1
    if chosen.owned:  # the owned card plus rented instances at the busy hours
        assert "instance-hours" in chosen.detail["owned_mix"]
        assert chosen.cost_usd == pytest.approx(chosen.detail["owned_monthly_usd"])
    else:
        assert chosen.cost_usd <= chosen.detail["owned_monthly_usd"]


def test_cheapest_per_region_group_beside_the_overall():
    scenario = parse_scenario({"name": "t", "model": "sizeup.examples.zoo:resnet50", "task": "vision",
                               "input_shape": "1x3x224x224", "traffic": {"peak_requests_per_s": 40},
                               "sla": {"e2e_p99_s": 0.05}, "constraints": {"devices": ["rtx-4090", "l4"],
                                                                           "quantizations": ["fp16"]}})
    pytest.importorskip("torch")
    result = plan_scenario(scenario, CATALOG)
    headline = build_sheet(result).headline
    groups = headline.by_region
    assert len(groups) >= 2 and min(e["cost_usd"] for e in groups.values()) == pytest.approx(result.chosen.cost_usd)
    assert region_group(result.chosen.offer.region) == next(iter(groups))
    assert "Cheapest by region group" in headline.text
    for group, entry in groups.items():  # each is the cheapest option the search found in that group
        in_group = [c.detail["by_region"][group]["cost_usd"] for c in result.ranked if group in c.detail["by_region"]]
        assert entry["cost_usd"] == pytest.approx(min(in_group))


def test_region_groups_of_the_shipped_offers():
    assert region_group("us-east-1") == region_group("eastus") == "north-america"
    assert region_group("cn") == "china"
    assert region_group("mars-1") == "mars-1"
    assert all(math.isfinite(o.on_demand_usd_per_hour) for o in CATALOG.offers.values())


def test_regions_constraint_limits_the_region_groups():
    scenario = parse_scenario({"name": "t", "model": "llama-3.1-8b", "task": "api", "traffic": {"users": 50},
                               "constraints": {"devices": ["l4", "rtx-4090"], "regions": ["us-central1"]}})
    result = plan_scenario(scenario, CATALOG)
    assert {c.offer.region for c in result.ranked} == {"us-central1"}
    assert set(build_sheet(result).headline.by_region) <= {"north-america"}
    assert replace(scenario.constraints, regions=()) != scenario.constraints
