"""The engine taken when none is named: one stated choice per use (data/engines/defaults.yaml), said in the output.
A one-device estimate with no --engine and no --quant is that device's row of the device table."""

from __future__ import annotations

import json

import pytest

from sizeup.api import compare_devices, estimate
from sizeup.cli.main import main
from sizeup.engines.defaults import default_engine, default_for_segment, default_runtime
from sizeup.workload.inference import InferenceConfig


@pytest.mark.parametrize("device, engine", [("rtx-4090", "llama.cpp"), ("apple-m3-max", "llama.cpp"),
                                            ("h100-sxm-80gb", "vllm"), ("rtx-6000-ada", "vllm")])
def test_one_device_is_its_row_of_the_device_table(device, engine):
    one = estimate("llama-3.1-8b", device=device)
    row = compare_devices("llama-3.1-8b", devices=[device])[0]
    assert one.execution.name == row.engine == engine
    assert one.weights.id == row.format
    assert one.decode.tokens_per_s.typical == pytest.approx(row.tokens_per_s)
    assert set(one.defaults) == {"engine", "quant"} and "data/engines/defaults.yaml" in one.defaults["engine"]


def test_a_named_engine_or_format_is_not_a_default():
    named = estimate("llama-3.1-8b", device="rtx-4090", engine="hf", quant="bf16")
    assert named.defaults == {} and named.execution.name == "hf"
    ladder = estimate("llama-3.1-8b", device="rtx-3060-12gb", engine="vllm")
    assert list(ladder.defaults) == ["quant"] and ladder.memory.fits
    assert ladder.weights.id == "awq-int4"  # bf16 does not fit 12 GB, the card has no fp8 units
    none = estimate("llama-3.1-70b", device="rtx-4090", engine="llama.cpp")  # even q2_k needs 26 GB
    assert none.weights.id == "q2_k" and not none.memory.fits and "none fits" in none.defaults["quant"]


def test_the_output_says_what_was_taken_and_why(capsys):
    assert main(["estimate", "llama-3.1-8b", "--device", "rtx-4090", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["config"]["engine"] == "llama.cpp" and data["defaults"]["engine"].startswith("llama.cpp: none named")
    assert data["defaults"]["quant"].startswith(f"{data['config']['quant']}: none named; the most precise")
    assert main(["estimate", "llama-3.1-8b", "--device", "rtx-4090"]) == 0
    text = capsys.readouterr().out
    assert "default engine: llama.cpp: none named; the default on consumer devices" in text


def test_every_class_and_use_has_a_default_with_a_reason():
    from sizeup.hardware.segments import SEGMENTS

    for segment in SEGMENTS:
        engine, why = default_for_segment(segment)
        assert engine and why.startswith(f"the default on {segment} devices: ") and len(why) > 40
    for use in ("serving", "batch", "edge"):
        assert default_engine(use)[0] in ("vllm", "llama.cpp")
    assert default_engine("library")[0] == InferenceConfig().engine == "hf"
    assert default_runtime() == "pytorch-eager"
    with pytest.raises(ValueError, match="no default engine for use 'nope'"):
        default_engine("nope")


def test_a_plan_says_which_engine_it_took():
    from sizeup.hardware.catalog import load_catalog
    from sizeup.plan.recommend import plan_scenario
    from sizeup.plan.scenario import parse_scenario

    scenario = parse_scenario({"name": "s", "model": "llama-3.2-1b", "task": "chat",
                               "traffic": {"users": 10, "prompt_tokens": 500, "output_tokens": 100},
                               "constraints": {"devices": ["l4"]}}, source="test")
    result = plan_scenario(scenario, load_catalog(include_user=False))
    assert scenario.constraints.engines == ()
    assert any(a.startswith("engine vllm: the scenario names none") for a in result.assumptions)
    assert result.chosen.engine == "vllm" and result.chosen.engine_version == "0.34"


@pytest.mark.parametrize("device, quant, engine", [("rtx-5090", "nvfp4", "vllm"), ("rtx-4090", "fp8", "vllm"),
                                                   ("rtx-5090", "q4_k_m", "llama.cpp"),
                                                   ("rtx-5090", "mxfp4", "llama.cpp")])
def test_a_named_format_the_consumer_default_cannot_load_takes_vllm(device, quant, engine):
    """defaults.yaml consumer `otherwise: vllm`: llama.cpp reads GGUF types and MXFP4 only (llama_cpp.py LOADS), so an
    NVFP4 or FP8 checkpoint on a GeForce card is served by vLLM, and the estimate says why; the device table agrees."""
    one = estimate("llama-3.1-8b", device=device, quant=quant)
    row = compare_devices("llama-3.1-8b", devices=[device], formats=[quant])[0]
    assert one.execution.name == row.engine == engine
    if engine == "vllm":
        assert "llama.cpp cannot load" in one.defaults["engine"]


def test_a_class_without_another_engine_keeps_its_default_and_its_one_line_refusal(capsys):
    assert default_for_segment("apple")[0] == "llama.cpp"
    assert main(["estimate", "llama-3.1-8b", "--device", "apple-m4-pro", "--quant", "nvfp4"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "llama.cpp cannot load nvfp4" in err[0]
