"""llama.cpp's `--no-kv-offload` (`-nkvo 1`, engines/llama_cpp_host_kv.py): the KV cache in host RAM, attention on
the host CPU. Memory: the cache leaves the device for host RAM; speed: the host's attention (FLOPs at the data's
vec_dot_f16 fraction of the host CPU's FP32 peak, bytes at its bandwidth), the activations over PCIe and the per-layer
copies and CPU nodes are added to the GPU's step."""

import pytest

from sizeup import api
from sizeup.engines.llama_cpp_host_kv import COPIES_PER_LAYER, HOST_NODES_PER_LAYER
from sizeup.engines.profile import engine_profile
from sizeup.errors import ConfigError


def _est(*opts, prompt=512, output=128, build="2024-01-07", device="rtx-3090-ti"):
    return api.estimate("llama-2-7b", device=device, engine="llama.cpp", quant="q4_0", batch=1, prompt=prompt,
                        output=output, build_date=build, engine_options=opts)


def test_the_cache_moves_to_host_ram():
    base, host = _est(), _est("no-kv-offload")
    assert base.memory.kv_cache_bytes > 0 and host.memory.kv_cache_bytes == 0
    assert host.memory.cpu_bytes - base.memory.cpu_bytes == base.memory.kv_cache_bytes
    assert host.memory.weights_bytes == base.memory.weights_bytes
    assert _est("nkvo").memory.kv_cache_bytes == 0


def test_both_phases_slow_and_the_prompt_most():
    base, host = _est(), _est("no-kv-offload")
    pre = base.prefill.tokens_per_s.typical / host.prefill.tokens_per_s.typical
    dec = base.decode.tokens_per_s.typical / host.decode.tokens_per_s.typical
    assert pre > 5 and 1 < dec < pre  # a 512-token prompt's attention is the CPU's FLOPs, a decoded token's is small


def test_the_prompt_attention_is_the_whole_kq_rectangle_on_one_thread_before_ggml_backend():
    """Build 2024-01-07: one thread (PR 2915's rule), no flash attention: 4 x 512 x 512 x 4096 x 32 FLOPs (KQ and
    KQ.V over the whole rectangle) plus the softmax, on one Raptor Cove core (32 FLOPs/clock x 5.5 GHz) at 1/3."""
    host = _est("no-kv-offload", output=0)
    note = next(a for a in host.assumptions if a.startswith("--no-kv-offload: attention"))
    assert "1 thread(s)" in note and "whole KQ rectangle" in note and "ASSUMED" in note
    matmul = 4 * 512 * 512 * 4096 * 32
    gflop = float(note.split(" GFLOP at")[0].rsplit("(", 1)[1])
    assert matmul / 1e9 < gflop < matmul * 1.02 / 1e9
    fraction = engine_profile("llama.cpp").range("host_kv_dot_fraction").typical
    assert host.prefill.latency_s.typical > matmul / (32 * 5.5e9 * fraction)


def test_later_builds_run_the_host_attention_on_every_core():
    old = next(a for a in _est("nkvo", output=0).assumptions if a.startswith("--no-kv-offload: attention"))
    later = _est("nkvo", output=0, build="2024-06-01")
    new = next(a for a in later.assumptions if a.startswith("--no-kv-offload: attention"))
    assert "1 thread(s)" in old and "24 thread(s)" in new
    assert _est("nkvo", output=0, build="2024-06-01").prefill.tokens_per_s.typical > \
        _est("nkvo", output=0).prefill.tokens_per_s.typical


def test_decode_pays_the_per_layer_copies_and_cpu_nodes():
    base, host = _est(prompt=1), _est("nkvo", prompt=1)
    extra = 1 / host.decode.tokens_per_s.typical - 1 / base.decode.tokens_per_s.typical
    copy = engine_profile("llama.cpp").range("host_kv_copy_s").typical
    assert extra > 32 * COPIES_PER_LAYER * copy
    assert HOST_NODES_PER_LAYER == 6 and COPIES_PER_LAYER == 4


def test_refused_where_the_cache_is_already_in_host_memory():
    with pytest.raises(ConfigError, match="no-kv-offload"):
        api.estimate("llama-2-7b", device="apple-m2-pro", engine="llama.cpp", quant="q4_0", batch=1, prompt=16,
                     output=16, engine_options=("no-kv-offload",))
