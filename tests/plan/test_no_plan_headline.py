"""What a plan says when nothing meets the scenario, and how a job is billed on an instance larger than it:
a serving family that misses the SLA unloaded is priced as one instance a month (never "$0.00 per job"); nothing
left to show says what rejected the families; a job on part of an instance uses the whole instance it pays for."""

from pathlib import Path

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.plan.headline import build_headline
from sizeup.plan.recipe import recipe_section
from sizeup.plan.recommend import plan_scenario
from sizeup.plan.scenario import load_scenario, parse_scenario

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(include_user=False)


def _quick(**keys):
    data = {"name": "t", "model": "llama-3.1-8b", "task": "chat", "traffic": {"users": 50, "prompt_tokens": 800,
                                                                              "output_tokens": 250}}
    return parse_scenario(data | keys)


def test_an_sla_missed_unloaded_is_priced_as_one_instance_a_month(catalog):
    result = plan_scenario(_quick(sla={"ttft_p95_s": 0.005}, constraints={"devices": ["l4"]}), catalog)
    assert not result.meets and result.closest is not None and result.closest.offer is not None
    head = build_headline(result)
    hourly = result.closest.offer.on_demand_usd_per_hour
    assert head.period == "month" and head.pricing_basis == "on-demand"
    assert head.cost_usd == pytest.approx(hourly * 730.0)
    assert "$0.00" not in head.text and "per job" not in head.text
    assert "No number of replicas meets the SLA: one misses it even unloaded; one instance costs" in head.text
    assert head.fleet.startswith("none sized")


def test_nothing_to_show_says_what_rejected_the_families(catalog):
    too_big = plan_scenario(_quick(model="llama-3.1-405b", constraints={"devices": ["l4"]}), catalog)
    assert too_big.chosen is None and too_big.closest is None
    text = build_headline(too_big).text
    assert text.startswith("No configuration meets the scenario and none came close: ")
    assert "families do not fit in memory" in text
    no_offer = plan_scenario(_quick(constraints={"devices": ["rtx-4060-ti-16gb"]}), catalog)
    assert [r.family for r in no_offer.rejected] == ["rtx-4060-ti-16gb"]
    assert "1 device has no cloud offer and none is owned" in build_headline(no_offer).text


def test_a_job_uses_the_whole_instance_it_pays_for(catalog):
    """docs/tasks/pretrain-1b.yaml fits on 2 H100s, but the cheapest holds 4 and is billed whole: the plan runs on
    all 4 (the same hourly price, half the hours), and a partial placement says that the instance is billed whole."""
    result = plan_scenario(load_scenario(ROOT / "docs" / "tasks" / "pretrain-1b.yaml"), catalog)
    chosen = result.chosen
    assert chosen.gpus == chosen.offer.gpu_count
    partial = [c for c in result.ranked if c.gpus < c.offer.gpu_count and c.detail.get("instances") == 1]
    assert partial and all("the whole instance billed" in c.detail["placement"] for c in partial)


def test_an_sglang_plan_is_served_with_its_own_launch_line(catalog):
    """SGLang's file carries its server line (engines/sglang.py launch): the recipe starts sglang.launch_server with the
    plan's tensor-parallel size, memory fraction and running-request cap (it used to say "no server command")."""
    scenario = _quick(sla={"ttft_p95_s": 2.0}, constraints={"devices": ["h100"], "engines": ["sglang"],
                                                            "quantizations": ["bf16"]})
    result = plan_scenario(scenario, catalog)
    assert result.meets and result.chosen.engine == "sglang"
    rows = {row[0]: row for row in recipe_section(result).table_rows}
    line = rows["serve one replica"][1]
    assert line.startswith("python3 -m sglang.launch_server --model-path ")
    assert f"--tp {result.chosen.gpus} " in line and f"--max-running-requests {result.chosen.max_batch} " in line
    assert "--mem-fraction-static 0." in line and "--dtype bfloat16" in line


def test_an_engine_without_a_launch_line_keeps_its_plan(catalog, monkeypatch):
    """A plan whose engine lists no server line (ExecutionModel.launch returns None) still gets its sheet; the recipe
    says so in its row."""
    from sizeup.engines.sglang import SGLang

    monkeypatch.setattr(SGLang, "launch", lambda self, request: None)
    scenario = _quick(sla={"ttft_p95_s": 2.0}, constraints={"devices": ["h100"], "engines": ["sglang"],
                                                            "quantizations": ["bf16"]})
    result = plan_scenario(scenario, catalog)
    rows = {row[0]: row for row in recipe_section(result).table_rows}
    assert rows["serve one replica"][1] == "(no server command listed)"
    assert "sglang" in rows["serve one replica"][2]
