"""The recipe on the sheet (issue 30, point 5): each command line the sheet prints, run as printed,
reproduces the figure beside it; the training layout is the estimate's; long jobs get a Young/Daly
checkpoint interval from a published failure rate."""

from __future__ import annotations

import json
import math
import shlex

import pytest

from sizeup.cli.main import main
from sizeup.hardware.catalog import load_catalog
from sizeup.plan.recommend import plan_scenario
from sizeup.plan.reliability import failure_rate, job_mtbf_s
from sizeup.plan.scenario import parse_scenario
from sizeup.plan.sheet import build_sheet
from tests.plan.example_sheets import example_sheet
from tests.plan.test_topology import PRETRAIN_13B

CATALOG = load_catalog(include_user=False)


def _recipe(sheet) -> dict[str, str]:
    section = next(s for s in sheet.sections if s.title == "Recipe")
    return {row[0]: row[1] for row in section.table_rows}


def _run_json(line: str, capsys) -> dict:
    argv = shlex.split(line)
    assert argv[0] == "sizeup"
    capsys.readouterr()
    code = main(argv[1:] + ["--json"])
    out = capsys.readouterr().out
    assert code in (0, 2), out
    return json.loads(out)


@pytest.mark.parametrize("name", ["team-api-200-users", "personal-7b-chat", "api-70b-p99-ttft"])
def test_serving_estimate_lines_reproduce_the_replicas_decode_steps(name, capsys):
    result, sheet = example_sheet(name)
    recipe = _recipe(sheet)
    steps = result.chosen.detail["decode_step_s"]
    for key, expected in (("one replica, unloaded", steps[0]), ("one replica, full batch", steps[-1])):
        data = _run_json(recipe[key], capsys)
        assert data["decode"]["latency_per_token_s"]["typical"] == pytest.approx(expected, rel=1e-9), key
    assert recipe["serve one replica"].startswith(("vllm serve", "llama-server"))


def test_a_tensor_parallel_replica_is_reproduced_on_its_offers_link(capsys):
    scenario = parse_scenario({"name": "tp", "model": "llama-3.1-70b", "task": "api",
                               "traffic": {"peak_requests_per_s": 2}, "sla": {"ttft_p95_s": 2, "tpot_p95_s": 0.08},
                               "constraints": {"devices": ["h100"], "quantizations": ["bf16"]}})
    result = plan_scenario(scenario, CATALOG)
    chosen = result.chosen
    assert chosen.gpus > 1
    line = _recipe(build_sheet(result))["one replica, unloaded"]
    assert f"--offer {chosen.offer.id}" in line
    data = _run_json(line, capsys)
    assert data["decode"]["latency_per_token_s"]["typical"] == pytest.approx(chosen.detail["decode_step_s"][0],
                                                                            rel=1e-9)


def test_the_training_line_reproduces_step_and_run_time(capsys):
    result = plan_scenario(parse_scenario(PRETRAIN_13B), CATALOG)
    chosen = result.chosen
    recipe = _recipe(build_sheet(result))
    data = _run_json(recipe["estimate"], capsys)
    assert data["step"]["latency_s"]["typical"] == pytest.approx(chosen.detail["step_s"], rel=1e-9)
    assert data["time_to_train_s"]["typical"] / 3600 == pytest.approx(chosen.latency["hours"], rel=1e-9)
    layout = chosen.detail["layout"]
    assert f"DP {layout['dp']}" in recipe["layout"] and f"ZeRO-{layout['zero']}" in recipe["layout"]
    assert f"micro-batch {layout['micro_batch']}" in recipe["layout"] and layout["recompute"] in recipe["layout"]
    assert f"--nnodes {layout['nodes']}" in recipe["launch"]


def test_the_edge_line_reproduces_the_underated_decode(capsys):
    result, sheet = example_sheet("jetson-edge")
    data = _run_json(_recipe(sheet)["estimate"], capsys)
    derate = result.scenario.edge.thermal_derate
    assert data["decode"]["latency_per_token_s"]["typical"] == pytest.approx(result.chosen.latency["tpot"] * derate,
                                                                            rel=1e-9)


def test_the_vision_line_reproduces_the_latency_per_image(capsys):
    pytest.importorskip("torch")
    result, sheet = example_sheet("vision-inspection")
    data = _run_json(_recipe(sheet)["latency per image"], capsys)
    assert data["devices"][0]["time_s"]["typical"] == pytest.approx(result.chosen.detail["latency_per_image_s"],
                                                                    rel=1e-9)


def test_checkpoint_interval_from_the_published_failure_rate():
    rate = failure_rate()
    assert rate.gpu_hours_per_interruption == pytest.approx(16384 * 54 * 24 / 419)  # Llama 3 paper, 3.3.4
    result = plan_scenario(parse_scenario(PRETRAIN_13B), CATALOG)
    cells = build_sheet(result).cells()
    chosen = result.chosen
    mtbf = job_mtbf_s(chosen.gpus)
    assert cells["job_mtbf"].value == pytest.approx(mtbf / 3600, abs=0.01)
    write = cells["checkpoint_write"].value
    assert cells["checkpoint_interval"].value == pytest.approx(math.sqrt(2 * write * mtbf), rel=1e-3)
    assert "arXiv:2407.21783" in cells["job_mtbf"].note


def test_every_example_prints_a_recipe():
    from tests.plan.example_sheets import NAMES

    for name in NAMES:
        if name == "vision-inspection":
            pytest.importorskip("torch")
        _, sheet = example_sheet(name)
        recipe = _recipe(sheet)
        assert any(line.startswith("sizeup ") for line in recipe.values()), name
