"""The envelope check (issue 30, point 7): a prediction beyond a physical or best-published bound is said,
with the figure at the bound, and never promised."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.plan.envelope import envelope_checks
from sizeup.plan.recommend import plan_scenario
from sizeup.plan.scenario import parse_scenario
from sizeup.plan.sheet import build_sheet
from tests.plan.example_sheets import NAMES, example_sheet
from tests.plan.test_topology import PRETRAIN_13B

CATALOG = load_catalog(include_user=False)


def _check(result, name):
    return next(c for c in envelope_checks(result) if c.name.startswith(name))


def test_decode_faster_than_weights_over_bandwidth_trips():
    result, _ = example_sheet("team-api-200-users")
    chosen = result.chosen
    check = _check(result, "decode step at batch 1")
    weights = chosen.detail["memory_parts"]["weights"]
    assert check.bound == pytest.approx(weights / chosen.device.memory_bandwidth_bytes_per_s)
    assert not check.tripped and check.predicted >= check.bound
    steps = list(chosen.detail["decode_step_s"])
    steps[0] = check.bound / 3  # a step three times faster than the memory can deliver the weights
    fast = replace(result, chosen=replace(chosen, detail={**chosen.detail, "decode_step_s": steps}))
    tripped = _check(fast, "decode step at batch 1")
    assert tripped.tripped and "physical" in tripped.basis
    sheet = build_sheet(fast)
    assert "NOT PROMISED" in sheet.verdict and sheet.headline.envelope
    assert "NOT PROMISED" in sheet.headline.text


def test_mfu_above_the_best_published_trips_with_the_run_at_the_bound():
    result = plan_scenario(parse_scenario(PRETRAIN_13B), CATALOG)
    check = _check(result, "model-FLOPs utilization")
    assert check.bound == 0.47 and "Megatron" in check.basis  # hopper: Megatron-Core's published 47%
    chosen = result.chosen
    if check.tripped:
        hours = chosen.latency["hours"] * chosen.detail["mfu"] / 0.47
        assert f"{hours:,.1f} h" in check.consequence
        assert "NOT PROMISED" in build_sheet(result).headline.text
    else:
        assert chosen.detail["mfu"] <= 0.47


def test_a_device_class_without_a_published_mfu_takes_the_highest_of_any():
    scenario = parse_scenario({"name": "ft", "model": "llama-3.1-8b", "task": "finetune",
                               "job": {"method": "lora", "tokens": 10_000_000, "seq": 2048},
                               "constraints": {"devices": ["l40s"]}})
    result = plan_scenario(scenario, CATALOG)
    check = _check(result, "model-FLOPs utilization")
    assert check.bound == 0.72 and "no published figure" in check.basis


def test_mlperf_bound_per_gpu():
    result, _ = example_sheet("api-70b-p99-ttft")
    chosen = result.chosen
    check = _check(result, "output tokens/s per GPU")
    per_gpu = chosen.detail["decode_batches"][-1] / chosen.detail["decode_step_s"][-1] / chosen.gpus
    assert check.predicted == pytest.approx(per_gpu)
    if chosen.device.id == "h200-sxm-141gb":  # MLPerf Inference v4.1, 8x H200, 31,302.7 tokens/s
        assert check.bound == pytest.approx(31302.7 / 8 * 68976648192 / result.arch.active_params)
    assert not check.tripped
    steps = [s / 100 for s in chosen.detail["decode_step_s"]]
    fast = replace(result, chosen=replace(chosen, detail={**chosen.detail, "decode_step_s": steps}))
    assert _check(fast, "output tokens/s per GPU").tripped


@pytest.mark.parametrize("name", NAMES)
def test_every_example_has_its_envelope_checked(name):
    if name == "vision-inspection":
        pytest.importorskip("torch")
    result, sheet = example_sheet(name)
    titles = [s.title for s in sheet.sections]
    if result.scenario.task != "vision":
        assert "Envelope check" in titles
    for check in envelope_checks(result):
        assert check.basis and (check.tripped == bool(check.consequence))
