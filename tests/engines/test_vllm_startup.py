"""vLLM's start-up check (engines/vllm.py VLLM._refuses_to_start): the KV pool must hold one request of max_model_len
tokens, else V0 and V1 raise at start-up. A --max-model-len given fails the fit; the model's own context is a note."""

import pytest

from sizeup.api import estimate

QWEN = dict(device="h100-sxm-80gb", engine="vllm@0.11.0", quant="bf16")


def _notes(result) -> str:
    return " ".join(result.memory.notes)


def test_a_max_model_len_the_pool_cannot_hold_does_not_start():
    # Qwen3-32B bf16 on one H100 80GB: ~4.5 GiB of pool, 40,960 tokens x 256 KiB = 10 GiB for one request
    result = estimate("qwen3-32b", engine_options=("max-model-len=40960",), **QWEN)
    assert not result.memory.fits
    assert "vLLM refuses to start" in _notes(result) and "10.00 GiB" in _notes(result)


def test_a_max_model_len_the_pool_holds_starts():
    result = estimate("qwen3-32b", engine_options=("max-model-len=16384",), **QWEN)
    assert result.memory.fits and "refuses" not in _notes(result)


def test_the_models_own_context_is_a_note_with_the_longest_that_starts():
    result = estimate("qwen3-32b", **QWEN)
    assert result.memory.fits
    text = _notes(result)
    assert "without --max-model-len takes the model's context, 40,960 tokens" in text
    most = int(text.split("unless given --max-model-len ")[1].split(" ")[0].replace(",", ""))
    per_token = 64 * 8 * 128 * 2 * 2  # layers x KV heads x head_dim x (K, V) x bf16
    assert most % 16 == 0 and most * per_token <= result.memory.kv_cache_bytes < (most + 16) * per_token


@pytest.mark.parametrize("model, device", [("llama-3.1-8b", "h100-sxm-80gb"), ("llama-3-8b", "h100-sxm-80gb")])
def test_a_pool_that_holds_the_context_says_nothing(model, device):
    result = estimate(model, device=device, engine="vllm", quant="bf16")
    assert result.memory.fits and "refuses" not in _notes(result) and "max-model-len" not in _notes(result)
