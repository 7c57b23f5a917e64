"""`sizeup estimate`, `estimate --devices`, `fit` and `models` print exactly `api.<verb>(...).to_dict()`."""

import pytest

from sizeup import api
from sizeup.errors import ConfigError
from tests.api.conftest import as_json


@pytest.mark.parametrize("argv, kwargs", [
    (["llama-3.1-8b", "--device", "rtx-4090", "--quant", "q4_k_m", "--engine", "llama.cpp"],
     dict(device="rtx-4090", quant="q4_k_m", engine="llama.cpp")),
    (["qwen2.5-72b", "--device", "h100", "--quant", "fp8", "--engine", "vllm", "--gpus", "2", "--batch", "8"],
     dict(device="h100", quant="fp8", engine="vllm", gpus=2, batch=8)),
    (["mistral-7b", "--device", "l4", "--sweep", "1,4,16"], dict(device="l4", sweep=(1, 4, 16))),
])
def test_estimate_json_is_the_api_result(cli_json, argv, kwargs):
    assert cli_json(["estimate", *argv, "--json"]) == as_json(api.estimate(argv[0], **kwargs).to_dict())


def test_a_configuration_that_does_not_fit_is_a_result_with_what_would(cli_json):
    # transformers in bf16 (named: a consumer card's default is llama.cpp at the most precise format that fits)
    result = api.estimate("llama-3.1-70b", device="rtx-4090", engine="hf", quant="bf16")
    assert not result.fits and [a.flag for a in result.would_fit] == ["gpus"]  # no context fits: weights alone
    gpus = result.would_fit[0].value
    assert result.would_fit[0].total_bytes < result.memory.usable_bytes.typical
    # the fewest GPUs whose whole memory range fits (three-way verdict 'fits'); half as many would not
    assert api.estimate("llama-3.1-70b", device="rtx-4090", engine="hf", quant="bf16", gpus=gpus).fit.verdict == "fits"
    assert api.estimate("llama-3.1-70b", device="rtx-4090", engine="hf", quant="bf16",
                        gpus=gpus // 2).fit.verdict != "fits"
    printed = cli_json(["estimate", "llama-3.1-70b", "--device", "rtx-4090", "--engine", "hf", "--quant", "bf16",
                        "--json"], codes=(2,))
    assert printed == as_json(result.to_dict()) and printed["would_fit"][0]["change"] == f"--gpus {gpus}"


def test_estimate_needs_a_device():
    with pytest.raises(ConfigError, match="estimate: give device=NAME"):
        api.estimate("llama-3.1-8b")


@pytest.mark.parametrize("devices", ["consumer", "rtx-4090,apple-m3-max,l4"])
def test_compare_json_is_the_api_result(cli_json, devices):
    printed = cli_json(["estimate", "llama-3.1-8b", "--devices", devices, "--json"])
    result = api.compare("llama-3.1-8b", devices=devices)
    assert printed == as_json(result.to_dict())
    if "," in devices:
        assert {r["device"] for r in printed["devices"]} == {"rtx-4090", "apple-m3-max", "l4"}
    speeds = [r["decode_tokens_per_s"] or 0.0 for r in printed["devices"] if r["fits"]]
    assert speeds == sorted(speeds, reverse=True)


def test_fit_json_is_the_api_result_and_answers_the_question(cli_json):
    printed = cli_json(["fit", "rtx-4060-ti-16gb", "--json"])
    assert printed == as_json(api.fit("rtx-4060-ti-16gb").to_dict())
    rows = printed["models"]
    assert len({r["model"] for r in rows}) >= 10
    assert all(r["engine"] in ("llama.cpp", "vllm") and r["format"] and r["tokens_per_s"] > 0 for r in rows)
    assert [r["tokens_per_s"] for r in rows] == sorted((r["tokens_per_s"] for r in rows), reverse=True)
    # an engine is only shown with a format it loads: llama.cpp GGUF, vLLM bf16 / fp8 / AWQ / GPTQ
    assert {r["format"] for r in rows if r["engine"] == "llama.cpp"} <= {"q8_0", "q6_k", "q5_k_m", "q4_k_m"}
    assert {r["format"] for r in rows if r["engine"] == "vllm"} <= {"bf16", "fp8", "awq-int4", "gptq-int4"}
    assert "llama-3.1-70b" in {m["model"] for m in printed["does_not_fit"]}


def test_fit_offers_each_device_only_what_runs_there():
    mac = api.fit("apple-m3-max", models=("llama-3.1-8b",))
    assert [(r.engine, r.format) for r in mac.rows] == [("llama.cpp", "q8_0")]  # no vLLM on Metal
    amd = api.fit("rx-7900-xtx", models=("qwen2.5-14b",))
    assert {r.engine for r in amd.rows} <= {"llama.cpp", "vllm"}
    assert all(r.format not in ("awq-int4", "gptq-int4", "fp8") for r in amd.rows)  # no AWQ/GPTQ on ROCm, no fp8 RDNA3


def test_fit_finetune_picks_the_most_precise_method_that_fits():
    result = api.fit("rtx-4090", task="finetune", models=("qwen2.5-0.5b", "llama-3.1-8b", "llama-3.1-70b"))
    methods = {r.model: r.method for r in result.rows}
    assert methods == {"qwen2.5-0.5b": "full", "llama-3.1-8b": "lora"}  # 16 GB of bf16 weights + checkpointing
    assert [m.model for m in result.does_not_fit] == ["llama-3.1-70b"]
    with pytest.raises(ConfigError, match="not a device sizeup prices fine-tuning on"):
        api.fit("apple-m3-max", task="finetune")


def test_models_json_is_the_api_result(cli_json):
    assert cli_json(["models", "llama", "8b", "--json"]) == as_json(api.models("llama 8b").to_dict())
    found = api.models("Qwen/Qwen3")
    assert [m.id for m in found.models] == ["qwen3-4b", "qwen3-4b-instruct-2507", "qwen3-8b", "qwen3-32b", "qwen3-30b-a3b",
                                            "qwen3-30b-a3b-instruct-2507", "qwen3-235b-a22b",
                                            "qwen3-next-80b-a3b-instruct"]
    moe = next(m for m in found.models if m.id == "qwen3-30b-a3b")
    assert moe.moe and moe.active_params < moe.params and moe.context == 40960
    assert len(api.models().models) >= 40
