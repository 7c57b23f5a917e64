"""`sizeup train`, `plan` and `hw` print exactly `api.<verb>(...).to_dict()`: on the shipped examples and presets."""

from pathlib import Path

import pytest

from sizeup import api
from tests.api.conftest import as_json

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("argv, kwargs", [
    (["llama-3.1-8b", "--method", "qlora", "--device", "rtx-4090"], dict(method="qlora", device="rtx-4090")),
    (["llama-3.1-70b", "--method", "full", "--device", "h100", "--gpus", "64", "--nodes", "8", "--tp", "8",
      "--zero", "1", "--tokens", "1e9"], dict(method="full", device="h100", gpus=64, nodes=8, tp=8, zero=1, tokens=1e9)),
    (["qwen2.5-7b", "--method", "lora", "--device", "a100-80g", "--framework", "hf", "--recompute", "full"],
     dict(method="lora", device="a100-80g", framework="hf", recompute="full")),
])
def test_train_json_is_the_api_result(cli_json, argv, kwargs):
    assert cli_json(["train", *argv, "--json"]) == as_json(api.train(argv[0], **kwargs).to_dict())


def test_train_compare_json_is_the_api_result(cli_json):
    printed = cli_json(["train", "llama-3.1-8b", "--device", "rtx-4090", "--compare", "full,lora,qlora", "--json"])
    result = api.train_methods("llama-3.1-8b", ["full", "lora", "qlora"], device="rtx-4090")
    assert printed == as_json(result.to_dict()) and [r.method for r in result.rows] == ["full", "lora", "qlora"]


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_plan_json_is_the_api_result_on_every_example(cli_json, example):
    if "vision" in example:
        pytest.importorskip("torch")  # its model is a torch module, traced
    path = str(EXAMPLES / example)
    report = api.plan(path)
    assert cli_json(["plan", path, "--json"], codes=(0, 2)) == as_json(report.to_dict())
    assert report.meets


def test_quick_plan_json_is_the_api_result(cli_json):
    printed = cli_json(["plan", "llama-3.1-8b", "--task", "chat", "--users", "500", "--ttft-p95", "1", "--json"],
                       codes=(0, 2))
    assert printed == as_json(api.plan("llama-3.1-8b", task="chat", users=500, ttft_p95=1.0).to_dict())


def test_plan_takes_a_scenario_as_a_dict():
    report = api.plan({"name": "d", "model": "qwen2.5-7b", "task": "chat",
                       "traffic": {"users": 10, "prompt_tokens": 500, "output_tokens": 200}})
    assert report.result.chosen is not None and report.to_dict()["plan"]["meets"] == report.meets


@pytest.mark.parametrize("argv, call", [
    (["hw", "show", "4090"], lambda: api.hw("4090")),
    (["hw", "list", "--kind", "tpu"], lambda: api.hw_list("tpu")),
    (["hw", "offers", "--gpu", "h100", "--provider", "aws"], lambda: api.offers("h100", provider="aws")),
])
def test_hw_json_is_the_api_result(cli_json, argv, call):
    assert cli_json([*argv, "--json"]) == as_json(call().to_dict())


def test_train_of_a_traced_zoo_module_is_the_api_result(cli_json):
    pytest.importorskip("torch")
    printed = cli_json(["train", "sizeup.examples.zoo:c2f", "--input", "8x64x64x64", "--device", "rtx-4090", "--json"])
    result = api.train("sizeup.examples.zoo:c2f", device="rtx-4090", inputs=("8x64x64x64",))
    assert printed == as_json(result.to_dict()) and result.fits


def test_quick_plan_options_beside_a_whole_scenario_are_refused():
    from sizeup.errors import ConfigError

    with pytest.raises(ConfigError, match="plan: option 'users' sets a quick plan"):
        api.plan(str(EXAMPLES / "personal-7b-chat.yaml"), users=10)
