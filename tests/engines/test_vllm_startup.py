"""vLLM's start-up check (engines/vllm.py VLLM._refuses_to_start): the KV pool must hold one request of max_model_len
tokens, else V0 and V1 raise at start-up. A --max-model-len given is refused in one line naming the longest that
starts (the server would not start: no fit, limit or served run to report); the model's own context is a note."""

import pytest

from sizeup.api import estimate
from sizeup.errors import ConfigError

QWEN = dict(device="h100-sxm-80gb", engine="vllm@0.11.0", quant="bf16")


def _notes(result) -> str:
    return " ".join(result.memory.notes)


def test_a_max_model_len_the_pool_cannot_hold_does_not_start():
    # Qwen3-32B bf16 on one H100 80GB: ~4.5 GiB of pool, 40,960 tokens x 256 KiB = 10 GiB for one request
    with pytest.raises(ConfigError) as refused:
        estimate("qwen3-32b", engine_options=("max-model-len=40960",), **QWEN)
    message = str(refused.value)
    assert "\n" not in message and message.startswith("--engine-opt max-model-len=40960: vLLM refuses to start")
    assert "10.00 GiB" in message and "give --engine-opt max-model-len=" in message


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
