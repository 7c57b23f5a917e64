"""llama.cpp's `-fa` and `-ub` as `--engine-opt flash-attn=on|off|auto` (alias fa) and `--engine-opt n-ubatch=N`
(alias ub) (engines/llama_cpp.py): flash attention drops the score matrix from the compute buffer, a larger
physical batch grows it; `auto` and no option keep the build's default; n_ubatch is clamped to n_batch."""

import pytest

from sizeup import api
from sizeup.engines.base import engine_settings
from sizeup.engines.llama_cpp_memory import compute_buffer
from sizeup.errors import ConfigError
from sizeup.ingest.load import load_model


def _est(*opts, build="2025-08-27", prompt=16384):
    return api.estimate("qwen2.5-7b", device="rtx-4090", engine="llama.cpp", quant="q8_0", batch=1, prompt=prompt,
                        output=0, build_date=build, engine_options=opts)


def test_the_options_and_their_aliases_set_the_profile():
    assert engine_settings("llama.cpp", ("flash-attn=on", "n-ubatch=2048")) == {"flash_attn": 1.0, "n_ubatch": 2048.0}
    assert engine_settings("llama.cpp", ("fa=0", "ub=256")) == {"flash_attn": 0.0, "n_ubatch": 256.0}
    assert engine_settings("llama.cpp", ("fa=auto",)) == {"flash_attn": -1.0}
    with pytest.raises(ConfigError, match="fa=on"):
        engine_settings("llama.cpp", ("fa=maybe",))


def test_flash_attention_on_drops_the_scores_from_the_compute_buffer():
    """A build before b6343 runs without flash attention by default: -fa 1 takes the 16k-token score matrix out."""
    arch = load_model("qwen2.5-7b")
    off, on, auto = _est(), _est("fa=on"), _est("fa=auto")
    assert off.memory.activations_bytes == compute_buffer(arch, 512, 16384, False)[0]
    assert on.memory.activations_bytes == compute_buffer(arch, 512, 16384, True)[0] < off.memory.activations_bytes
    assert auto.memory.activations_bytes == off.memory.activations_bytes
    current_off = _est("flash-attn=off", build=None)  # the current build's default is on: off puts the scores back
    assert current_off.memory.activations_bytes == off.memory.activations_bytes


def test_n_ubatch_sizes_the_physical_batch_and_is_clamped_to_n_batch():
    arch = load_model("qwen2.5-7b")
    big = _est("ub=2048", "fa=1")
    assert big.memory.activations_bytes == compute_buffer(arch, 2048, 16384, True)[0]
    assert big.memory.activations_bytes > _est("fa=1").memory.activations_bytes
    assert _est("ub=8192", "fa=1").memory.activations_bytes == big.memory.activations_bytes  # n_batch 2048
    with pytest.raises(ConfigError, match="n-ubatch"):
        _est("ub=0")
