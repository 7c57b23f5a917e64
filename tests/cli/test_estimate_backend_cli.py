"""`sizeup estimate --engine llama.cpp --backend ...` (issue 18): the backend's kernels are priced and named; bad
combinations are refused with one line and exit code 1; without --backend nothing changes."""

import json

import pytest

from sizeup.cli.main import main

BASE = ["estimate", "llama-3-8b", "--device", "rtx-3090", "--quant", "q4_0", "--engine", "llama.cpp"]


def _json(capsys, argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_vulkan_backend_prices_and_names_its_kernel(capsys):
    default, vulkan = _json(capsys, BASE), _json(capsys, [*BASE, "--backend", "vulkan"])
    assert default["config"]["backend"] is None and vulkan["config"]["backend"] == "vulkan"
    notes = " | ".join(vulkan["assumptions"])
    assert "llama.cpp built with the vulkan backend" in notes and "vulkan-coopmat2 kernel" in notes
    assert "decode: no llama.cpp vulkan kernel entry for q4_0 on rtx-3090" in notes
    assert not any("vulkan" in a for a in default["assumptions"])
    # CUDA MMQ and Vulkan coopmat2 are priced differently (PR #12135, RTX 3090: CUDA 5061 vs coopmat2 4259 tok/s)
    assert vulkan["prefill"]["tokens_per_s"]["typical"] != default["prefill"]["tokens_per_s"]["typical"]


def test_the_native_backend_named_is_the_default(capsys):
    default, cuda = _json(capsys, BASE), _json(capsys, [*BASE, "--backend", "cuda"])
    assert cuda["prefill"] == default["prefill"] and cuda["decode"] == default["decode"]


@pytest.mark.parametrize("argv, message", [
    ([*BASE, "--backend", "metal"], "--backend metal: rtx-3090 (nvidia gpu) runs llama.cpp with cuda or vulkan"),
    (["estimate", "llama-3-8b", "--device", "rx-7900-xtx", "--engine", "llama.cpp", "--quant", "q4_0", "--backend",
      "cuda"], "--backend cuda: rx-7900-xtx (amd gpu) runs llama.cpp with hip or vulkan"),
    (["estimate", "llama-3-8b", "--device", "rtx-3090", "--engine", "vllm", "--backend", "vulkan"],
     "--backend vulkan: vLLM runs rtx-3090 (nvidia gpu) on its cuda platform only (--backend cuda or none); another "
     "backend is a llama.cpp or mlc or ollama build option: use it with --engine llama.cpp or mlc or ollama"),
    # a data-centre card's default engine is vLLM (data/engines/defaults.yaml): no llama.cpp build to choose
    (["estimate", "llama-3-8b", "--device", "a100-80gb", "--backend", "vulkan"], "use it with --engine llama.cpp"),
    (["estimate", "llama-3-8b", "--engine", "llama.cpp", "--backend", "vulkan"], "only with --device NAME"),
])
def test_bad_backend_combinations_are_one_line_errors(capsys, argv, message):
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_api_estimate_takes_the_backend():
    from sizeup.api import estimate

    e = estimate("llama-3-8b", device="arc-b580", quant="q4_k_m", engine="llama.cpp", backend="vulkan")
    assert e.config.backend == "vulkan"
    assert any("vulkan-coopmat kernel" in a for a in e.assumptions)


def test_build_date_selects_the_kernel_of_that_build(capsys):
    """F16 batch-1 decode ran DMMV until llama.cpp PR #10318 (kernels.yaml `until`): an older build is priced
    with it and says so; the date is in the JSON config."""
    argv = ["estimate", "llama-3.1-8b", "--device", "a100-80gb", "--engine", "llama.cpp", "--quant", "f16"]
    current, old = _json(capsys, argv), _json(capsys, [*argv, "--build-date", "2024-05-10"])
    assert current["config"]["build_date"] is None and old["config"]["build_date"] == "2024-05-10"
    assert any("cuda-dmmv-f16" in a for a in old["assumptions"])
    assert not any("cuda-dmmv-f16" in a for a in current["assumptions"])
    assert old["decode"]["tokens_per_s"]["typical"] < current["decode"]["tokens_per_s"]["typical"]


@pytest.mark.parametrize("argv, message", [
    ([*BASE[:-2], "--engine", "vllm", "--build-date", "2024-05-10"], "--build-date 2024-05-10: a llama.cpp build option"),
    ([*BASE, "--build-date", "2024-13-40"], "--build-date '2024-13-40': expected a date YYYY-MM-DD"),
    (["estimate", "llama-3-8b", "--engine", "llama.cpp", "--build-date", "2024-05-10"], "only with --device NAME"),
])
def test_bad_build_dates_are_one_line_errors(capsys, argv, message):
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
