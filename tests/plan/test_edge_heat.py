"""Edge under heat: the edge planner tries a Jetson's power modes up to the one named and keeps the lowest that
meets the latency; the sheet's fault plan names the temperature to cut the batch at, from the module's published
trip points; `watch --util --device` takes the same figures."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from sizeup.cli.main import main
from sizeup.hardware.catalog import load_catalog
from sizeup.hardware.thermal import thermal_profile
from sizeup.plan.edge import plan_edge, power_modes
from sizeup.plan.recommend import plan_scenario
from sizeup.plan.scenario import load_scenario
from sizeup.plan.sheet import build_sheet

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FIXTURES = Path(__file__).resolve().parents[1] / "measure" / "fixtures"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(include_user=False)


def _scenario(device, latency_s=0.1):
    s = load_scenario(EXAMPLES / "jetson-edge.yaml")
    return replace(s, edge=replace(s.edge, device=device, latency_s=latency_s))


def test_the_named_mode_is_the_ceiling(catalog):
    modes = [d.power_mode for d in power_modes(catalog, catalog.device("jetson-orin-nano-8gb"))]
    assert modes == ["15W", "25W", "MAXN_SUPER"]
    assert [d.power_mode for d in power_modes(catalog, catalog.device("orin nano 15w"))] == ["15W"]
    agx = [d.tdp_w for d in power_modes(catalog, catalog.device("jetson-agx-orin-64gb-50w"))]
    assert agx == sorted(agx) and agx[-1] == 50
    assert power_modes(catalog, catalog.device("rtx-4090")) == [catalog.device("rtx-4090")]


def test_the_lowest_mode_that_meets_is_kept(catalog):
    scenario = _scenario("jetson-orin-nano-8gb")
    result = plan_scenario(scenario, catalog)
    chosen = result.chosen
    assert chosen.quant == "bf16" and chosen.device.power_mode == "15W"
    assert chosen.latency["tpot"] <= scenario.edge.latency_s
    # the same format at the modes above it is faster, but more than the latency needs
    arch = result.arch
    faster = plan_edge(_scenario("jetson-orin-nano-8gb", latency_s=chosen.latency["tpot"] * 0.8), catalog, arch)
    assert faster.chosen is not None and faster.chosen.device.power_mode in ("25W", "MAXN_SUPER")
    assert any("power modes tried" in a for a in result.assumptions)


def test_a_mode_named_and_too_slow_is_a_miss_not_a_silent_upgrade(catalog):
    result = plan_scenario(_scenario("orin nano 15w", latency_s=0.02), catalog)
    assert all(c.device.power_mode == "15W" for c in result.ranked)
    assert all("15w" in r.family for r in result.rejected)


def test_the_fault_plan_names_the_throttle_temperature(catalog):
    sheet = build_sheet(plan_scenario(_scenario("jetson-orin-nano-8gb"), catalog))
    fault = next(s for s in sheet.sections if s.title == "Fault plan")
    cell = next(c for c in fault.cells if c.key == "thermal_cut")
    trip = thermal_profile(catalog.device("jetson-orin-nano-8gb")).trips[0]
    assert cell.value == trip.temperature_c == 99 and cell.unit == "°C" and "sw-throttle" in cell.note
    assert any("clock loss there is not published" in a for a in sheet.assumptions)


def test_no_trip_points_no_cut_temperature(catalog):
    result = plan_scenario(_scenario("apple-m2"), catalog)
    sheet = build_sheet(result)
    fault = next(s for s in sheet.sections if s.title == "Fault plan")
    assert not any(c.key == "thermal_cut" for c in fault.cells)
    assert any("no published thermal trip points" in a for a in result.assumptions)


def test_watch_takes_the_clock_and_trip_from_the_catalog(capsys):
    code = main(["watch", "--replay", str(FIXTURES / "tegrastats_orin_hot.log"), "--device", "jetson-agx-orin-64gb",
                 "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["diagnosis"]["verdict"] == "throttled-thermal"
    max_mhz = load_catalog().device("jetson-agx-orin-64gb").power_mode_clocks["gpu_max_hz"] / 1e6
    assert out["diagnosis"]["numbers"]["clock_lost"] == pytest.approx(1 - 624 / max_mhz)


def test_a_power_mode_is_bought_as_its_module(catalog):
    from sizeup.hardware.purchase import purchases_for

    base, mode = catalog.device("jetson-orin-nano-8gb"), catalog.device("orin nano 15w")
    assert purchases_for(catalog, mode) == purchases_for(catalog, base) != []
