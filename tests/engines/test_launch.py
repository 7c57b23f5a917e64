"""Each servable engine's own server line (ExecutionModel.launch, engines/launch.py): the plan's flags reach the
command each engine's CLI takes, and the memory share the line pins is the one the estimate priced."""

from __future__ import annotations

import pytest

from sizeup.engines import resolve
from sizeup.engines.launch import LaunchRequest
from sizeup.hardware.catalog import load_catalog


@pytest.fixture(scope="module")
def h100():
    return load_catalog(include_user=False).device("h100-sxm-80gb")


def _request(**kw):
    base = dict(checkpoint="meta-llama/Llama-3.1-8B", gpus=2, max_len=3700, max_batch=48, quant="bf16")
    return LaunchRequest(**(base | kw))


def _flag(args, name):
    return args[args.index(name) + 1]


def test_vllm_serves_the_priced_release_with_the_plans_flags(h100):
    model = resolve("vllm", h100)
    launch = model.launch(_request(quant="awq-int4", checkpoint="org/awq"))
    assert launch.command == ("vllm", "serve") and launch.args[0] == "org/awq" and launch.port == 8000
    assert _flag(launch.args, "--tensor-parallel-size") == "2" and _flag(launch.args, "--max-num-seqs") == "48"
    assert _flag(launch.args, "--max-model-len") == "3700" and _flag(launch.args, "--quantization") == "awq"
    assert float(_flag(launch.args, "--gpu-memory-utilization")) == model.profile.value("gpu_memory_utilization", None)
    assert launch.release == model.version and "--dtype" not in launch.args


def test_vllm_passes_the_images_the_plan_sized(h100):
    launch = resolve("vllm", h100).launch(_request(images={"count": 2, "width": 640, "height": 480}))
    assert _flag(launch.args, "--limit-mm-per-prompt") == '{"image":{"count":2,"width":640,"height":480}}'
    assert _flag(launch.args, "--dtype") == "bfloat16"


def test_sglang_pins_the_memory_fraction_it_priced_at_the_replicas_tp(h100):
    model = resolve("sglang", h100)
    launch = model.launch(_request(gpus=4, quant="fp8"))
    assert launch.command == ("python3", "-m", "sglang.launch_server") and launch.port == 30000
    assert _flag(launch.args, "--model-path") == "meta-llama/Llama-3.1-8B" and _flag(launch.args, "--tp") == "4"
    assert float(_flag(launch.args, "--mem-fraction-static")) == pytest.approx(model.mem_fraction(4), abs=5e-4)
    assert _flag(launch.args, "--max-running-requests") == "48" and _flag(launch.args, "--quantization") == "fp8"
    assert _flag(launch.args, "--context-length") == "3700" and "--enable-metrics" in launch.args


def test_trtllm_serve_pins_the_kv_share(h100):
    model = resolve("tensorrt-llm", h100)
    launch = model.launch(_request())
    assert launch.command == ("trtllm-serve",) and launch.args[0] == "meta-llama/Llama-3.1-8B"
    assert _flag(launch.args, "--tp_size") == "2" and _flag(launch.args, "--max_batch_size") == "48"
    assert float(_flag(launch.args, "--kv_cache_free_gpu_memory_fraction")) == model.profile.value(
        "kv_free_gpu_memory_fraction", None)


def test_llama_server_splits_its_context_over_the_slots(h100):
    model = resolve("llama.cpp", h100)
    launch = model.launch(_request(checkpoint="org/gguf:Q4_K_M", max_batch=4, quant="q4_k_m"))
    assert launch.entrypoint and launch.port == 8080 and model.CHECKPOINT == "gguf"
    assert _flag(launch.args, "--hf-repo") == "org/gguf:Q4_K_M" and _flag(launch.args, "--ctx-size") == str(3700 * 4)
    assert _flag(launch.args, "--parallel") == "4" and "--metrics" in launch.args


def test_an_engine_without_a_server_line_says_none(h100):
    assert resolve("hf", h100).launch(_request()) is None
