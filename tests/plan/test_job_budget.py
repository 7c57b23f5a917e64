"""`budget.job_usd` bounds every job planner: a batch generation run (it was ignored: a $131 run was chosen under a
$5 budget) and a training job. Over the budget, nothing is chosen; the closest option says by how much, with both
figures (issue 27 red team)."""

from __future__ import annotations

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.plan.recommend import plan_scenario
from sizeup.plan.scenario import parse_scenario

CATALOG = load_catalog(include_user=False)
BATCH = {"name": "b", "model": "qwen2.5-0.5b", "task": "batch", "job": {"tokens": 10_000_000_000},
         "constraints": {"devices": ["l4", "a10g"]}}
FINETUNE = {"name": "f", "model": "qwen2.5-0.5b", "task": "finetune", "job": {"method": "lora", "tokens": 10_000_000},
            "constraints": {"devices": ["l4", "a10g"]}}


@pytest.mark.parametrize("base", [BATCH, FINETUNE], ids=["batch", "finetune"])
def test_a_job_over_its_budget_is_not_chosen_and_says_by_how_much(base):
    free = plan_scenario(parse_scenario(base), CATALOG)
    assert free.chosen is not None
    cheapest = free.chosen.cost_usd
    budget = cheapest / 4
    tight = plan_scenario(parse_scenario({**base, "budget": {"job_usd": budget}}), CATALOG)
    assert tight.chosen is None and tight.closest is not None
    assert tight.closest.cost_usd == pytest.approx(cheapest)
    assert tight.closest_miss.startswith("over the job budget: ")
    assert f"over the ${budget:,.0f} job budget" in tight.closest_miss
    assert f"${cheapest:,.0f}" in tight.closest_miss
    assert any(r.reason == tight.closest_miss.removeprefix("over the job budget: ") for r in tight.rejected)
    roomy = plan_scenario(parse_scenario({**base, "budget": {"job_usd": cheapest * 2}}), CATALOG)
    assert roomy.chosen is not None and roomy.chosen.cost_usd <= cheapest * 2


def test_the_cli_exits_2_naming_the_budget(tmp_path, capsys):
    from sizeup.cli.main import main

    scenario = tmp_path / "batch.yaml"
    scenario.write_text("name: b\nmodel: qwen2.5-0.5b\ntask: batch\njob: {tokens: 10000000000}\nbudget: {job_usd: 5}\n"
                        "constraints: {devices: [l4]}\n")
    assert main(["plan", str(scenario)]) == 2
    out = capsys.readouterr().out
    assert "NO configuration meets the scenario" in out and "over the $5 job budget" in out


def test_a_batch_sheet_names_no_training_method():
    """Batch generation trains nothing: its sheet showed `method lora` (the job section's default)."""
    from sizeup.plan.sheet import build_sheet

    sheet = build_sheet(plan_scenario(parse_scenario(BATCH), CATALOG))
    keys = {cell.key for section in sheet.sections for cell in section.cells}
    assert "method" not in keys
    finetune = build_sheet(plan_scenario(parse_scenario(FINETUNE), CATALOG))
    assert "method" in {cell.key for section in finetune.sections for cell in section.cells}
