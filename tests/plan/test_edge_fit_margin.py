"""The edge planner keeps a format only where the memory range's high end fits (workload/device_fit.py
fit_verdict): qwen3-8b q8_0 on a 10 GB RTX 3080 with a 5,300-token context fits at the typical figure, not at the
high end of its range (a short context of the same model ran with layers on the CPU:
tests/validation/rows_check_1205.yaml, chk-llmfit1008-rtx3080-qwen3-8b-llamacpp-q8_0)."""

from dataclasses import replace
from pathlib import Path

from sizeup.hardware.catalog import load_catalog
from sizeup.plan.recommend import plan_scenario
from sizeup.plan.scenario import load_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_may_not_fit_is_not_a_comfortable_fit():
    s = load_scenario(EXAMPLES / "jetson-edge.yaml")
    s = replace(s, model="qwen3-8b", edge=replace(s.edge, device="rtx-3080-10gb", latency_s=1.0),
                traffic=replace(s.traffic, prompt_tokens=5000, output_tokens=300))  # typical fits, the high end not
    result = plan_scenario(s, load_catalog(include_user=False))
    assert result.chosen is not None and result.chosen.quant != "q8_0"
    q8 = next(r for r in result.rejected if " q8_0 " in r.family)
    assert q8.reason.startswith("may not fit: the high end of the memory range")
