"""llama.cpp's device memory (engines/llama_cpp_memory.py): the compute buffer against the buffers llama.cpp printed,
the token embedding kept in CPU RAM, flash attention by build."""

from dataclasses import replace

import pytest

from sizeup import api
from sizeup.engines.llama_cpp_memory import compute_buffer, flash_attention_default, input_layer_bytes
from sizeup.formats import get_format
from sizeup.ingest.load import load_model

MIB = 2**20


def _arch(name):
    return load_model(name)


@pytest.mark.parametrize("model, cache, flash, printed_mib, stage", [
    # Qwen3-4B Q4_K_M, n_ctx 4096, flash attention auto -> enabled: "CUDA0 compute buffer size = 301.75 MiB"
    # (stored text id 55797679949, a DGX Spark llama.cpp eval log): 512 x (151936 + 2560) x 4 B exactly
    ("qwen3-4b", 4096, True, 301.75, "logits"),
    # Llama-3.1-8B, n_ctx 8192, flash_attn 0: "CUDA0 compute buffer size = 560.00 MiB" (the Ollama logs of
    # tests/validation/llamacpp_memory_measurements.yaml): one layer's 32 x 8192 x 512 f32 scores and the mask
    ("llama-3.1-8b", 8192, False, 560.0, "attention"),
    # Qwen2.5-7B-class, n_ctx 2048: "CUDA0 compute buffer size = 304 MiB" (github.com/JamePeng/llama-cpp-python PR 1)
    ("qwen2.5-7b", 2048, False, 304.0, "logits"),
])
def test_compute_buffer_matches_the_printed_buffers(model, cache, flash, printed_mib, stage):
    size, sentence = compute_buffer(_arch(model), 512, cache, flash)
    assert size / MIB == pytest.approx(printed_mib, rel=0.01)
    assert f"the {stage}" in sentence


def test_without_flash_attention_the_buffer_grows_with_the_cache():
    """fedora-copr/logdetective PR 106 (mistral-7b-instruct-v0.2 Q4_K_S, PR 111; flash_attn 0): 164 MiB at n_ctx 2048,
    2144 MiB at 32768. v0.2 has no sliding window: the preset (v0.1's 4096-token window) without it."""
    mistral = _arch("mistral-7b")
    arch = replace(mistral, layers=tuple(replace(layer, attention=replace(layer.attention, window=None))
                                         for layer in mistral.layers))
    small, big = (compute_buffer(arch, 512, n, False)[0] / MIB for n in (2048, 32768))
    assert small == pytest.approx(164, rel=0.03) and big == pytest.approx(2144, rel=0.03)
    assert compute_buffer(arch, 512, 32768, True)[0] / MIB < small  # flash attention: no score matrix


def test_flash_attention_is_the_default_from_build_b6343():
    assert flash_attention_default(None) and flash_attention_default("2025-09-01")
    assert not flash_attention_default("2024-06-01")


def test_the_token_embedding_stays_in_cpu_ram_unless_tied():
    llama = _arch("llama-3.1-8b")
    # llama-3.1-8b Q4_K_M: 'CPU_Mapped model buffer size = 281.81 MiB' (the embedding) beside 'CUDA0 ... 4403.49 MiB'
    assert input_layer_bytes(llama, get_format("q4_k_m")) / MIB == pytest.approx(281.81, abs=0.01)
    assert input_layer_bytes(_arch("qwen3-4b"), get_format("q4_k_m")) == 0  # tied: the output copy is on the device
    est = api.estimate("llama-3.1-8b", device="rtx-4090", engine="llama.cpp", quant="q4_k_m", prompt=512, output=128)
    assert est.memory.weights_bytes / MIB == pytest.approx(4403.49, abs=0.05)
    assert est.memory.cpu_bytes / MIB == pytest.approx(281.81, abs=0.05)


def test_fit_cuts_the_context_then_moves_layers_to_the_cpu():
    """--engine-opt fit (llama-server's --fit on, common/fit.cpp): the training context cut toward 4096 (rounded to
    256) to leave 1 GiB free; where 4096 does not leave it, layers from the first one go to the CPU."""
    est = api.estimate("qwen3-8b", device="rtx-3080-10gb", engine="llama.cpp", quant="q8_0", prompt=64, output=300,
                       engine_options=("fit",))
    note = next(a for a in est.assumptions if a.startswith("llama.cpp --fit: the context cut from 40,960 to "))
    ctx = int(note.split(" to ")[1].split(" tokens")[0].replace(",", ""))
    assert 4096 <= ctx < 40960 and ctx % 256 == 0
    assert est.memory.kv_cache_bytes == ctx * 36 * 8 * 128 * 2 * 2  # qwen3-8b: 36 layers x 8 KV heads x 128 x K,V
    big = api.estimate("llama-3.1-70b", device="rtx-4090", engine="llama.cpp", quant="q4_k_m", cpu="ryzen-7-7800x3d",
                       prompt=64, output=64, engine_options=("fit", "fit-target=2048"))
    split = next(a for a in big.assumptions if a.startswith("llama.cpp --fit: 4,096-token context"))
    layers = int(split.split("context (its minimum 4,096), ")[1].split(" of 80")[0])
    assert 0 < layers < 80 and "leave 2,048 MiB" in split
    assert big.memory.total_bytes <= big.memory.usable_bytes.typical - 2048 * MIB
    plain = api.estimate("qwen3-8b", device="rtx-3080-10gb", engine="llama.cpp", quant="q8_0", prompt=64, output=300)
    assert not any("--fit" in a for a in plain.assumptions)  # llama-bench's default: off
