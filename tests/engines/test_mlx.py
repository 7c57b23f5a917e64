"""MLX (engines/mlx.py): formats of mlx_lm.convert, the device check, chunked prefill memory, the first call."""

import pytest

from sizeup import api
from sizeup.engines import resolve
from sizeup.errors import ConfigError
from sizeup.formats import get_format, groupwise_bytes
from sizeup.hardware.catalog import load_catalog


class _T:
    def __init__(self, shape, role):
        self.name, self.shape, self.role, self.layer = "w", shape, role, 0

    @property
    def numel(self):
        return self.shape[0] * self.shape[1]


def test_mlx_q4_is_4_5_bits_per_weight():
    # mlx_lm.convert -q: 4-bit codes, group 64, a 16-bit scale and a 16-bit bias per group: 4 + 32/64 = 4.5 bits
    fmt = get_format("mlx-q4")
    assert groupwise_bytes(_T((4096, 4096), "mlp"), fmt.layout) * 8 / (4096 * 4096) == 4.5
    assert groupwise_bytes(_T((128256, 4096), "embedding"), fmt.layout) * 8 / (128256 * 4096) == 4.5


def test_mlx_runs_on_apple_only():
    with pytest.raises(ConfigError, match="Apple silicon"):
        resolve("mlx", load_catalog().device("rtx-4090"))


def test_unfused_prefill_attention_before_the_causal_mask_update():
    # mlx-lm PR #40 (2025-03-20): from then the fused kernel; before it one layer's scores of a 2048-token chunk
    kw = dict(device="apple-m4-pro", quant="mlx-q4", prompt=32159, output=1000)
    old = api.estimate("llama-3.1-8b", engine="mlx@0.21.4", **kw).memory
    new = api.estimate("llama-3.1-8b", engine="mlx@0.31", **kw).memory
    scores = 2 * 32 * 2048 * 32159  # bf16 x heads x chunk x prompt
    assert old.activations_bytes - new.activations_bytes == scores


def test_first_call_only_for_a_fresh_process():
    kw = dict(device="apple-m4-max", quant="mlx-q4", prompt=32, output=16)
    cold = api.estimate("llama-3.1-8b", engine="mlx", **kw).prefill.latency_s.typical
    warm = api.estimate("llama-3.1-8b", engine="mlx-warm", **kw).prefill.latency_s.typical
    assert cold - warm == pytest.approx(0.40)  # data/engines/mlx.yaml cold_start_s typical


def test_prompt_peak_holds_the_in_flight_command_buffers_inputs():
    """mlx/backend/metal/eval.cpp keeps each op's inputs until its command buffer completes; transforms.cpp lets
    MAX_ACTIVE_TASKS (10) + 1 run, each up to max_mb_per_buffer (40 MB on a Pro chip): the prompt step's peak holds
    that many buffers' activations, a short prompt's far less (its buffers are mostly weights)."""
    from sizeup import api

    def held(prompt):
        est = api.estimate("tests/validation/configs/qwen3-4b-instruct-2507.json", device="apple-m3-pro-18gb",
                           engine="mlx-benchmark", quant="mlx-q4", prompt=prompt, output=128)
        note = next(a for a in est.assumptions if "command buffer" in a)
        return float(note.split(": +")[1].split(" MiB")[0].replace(",", ""))

    assert 300 < held(2048) <= 11 * 40e6 / 2**20 and held(16) < held(2048) / 5


def test_mlx_runs_a_prompt_past_the_configs_context_and_says_so():
    # mlx_lm/generate.py reads no max_position_embeddings (data/engines/mlx.yaml caps_context 0): mlx-lm PR #40 ran a
    # 33,898-token prompt on Mistral 7B (32,768 in its config); other engines still refuse it
    kw = {"device": "apple-m2-ultra", "quant": "mlx-q4", "prompt": 33898, "output": 1}
    est = api.estimate("mistral-7b", engine="mlx", **kw)
    assert any("beyond the 32,768-token context" in a for a in est.assumptions)
    with pytest.raises(ConfigError, match="longer than the 32,768-token context"):
        api.estimate("mistral-7b", device="apple-m2-ultra", engine="llama.cpp", quant="q4_0", prompt=33898, output=1)


def test_mlx_keeps_every_token_of_mistral_without_its_sliding_window():
    # mlx_lm maps model_type mistral to models/llama.py, which keeps one full KVCache per layer (no sliding window):
    # at 8,192 tokens the cache holds all of them, llama.cpp (which honours the 4,096-token window) half
    kw = {"device": "apple-m2-ultra", "prompt": 8000, "output": 192}
    mlx = api.estimate("mistral-7b", engine="mlx", quant="mlx-q4", **kw).memory.kv_cache_bytes
    per_token = 32 * 2 * 8 * 128 * 2  # layers x (K, V) x kv heads x head size x fp16
    assert mlx == 8192 * per_token
