"""Inference memory per engine: fits, limits, the vLLM pool; invariants by hypothesis."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model
from sizeup.engines import resolve
from sizeup.price.memory import MemoryConfig, inference_memory, kv_bytes_per_sequence
from sizeup.units import GIB
from sizeup.workload.inference import InferenceConfig, estimate_inference
from sizeup.workload.quantize import get_format

CATALOG = load_catalog(include_user=False)
LLAMA = load_model("llama-3.1-8b")


def memory(engine="hf", device="rtx-4090", batch=1, context=4096, quant="bf16", **kw):
    return inference_memory(LLAMA, resolve(engine, CATALOG.device(device)),
                            MemoryConfig(batch=batch, context=context, prompt=min(context, 512), weights=get_format(quant), **kw))


def test_breakdown_sums_to_total_and_8b_bf16_fits_a_24gb_card():
    m = memory()
    assert m.total_bytes == m.weights_bytes + m.kv_cache_bytes + m.activations_bytes + m.overhead_bytes
    assert m.kv_cache_bytes == 4096 * 131_072
    assert m.fits  # 16.1 GB of weights + 0.5 GB of cache on a 24 GB card
    assert not memory(device="rtx-4060-ti-16gb", batch=4).fits  # + 2 GiB of cache


def test_vllm_preallocates_a_kv_pool():
    m = memory(engine="vllm", device="a100-sxm-80gb", context=8192)
    per_seq = kv_bytes_per_sequence(LLAMA, 8192, "fp16", block=16)
    assert m.kv_cache_bytes > 40 * GIB  # 0.9 × 80 GiB minus 16 GB of weights and the profiled peak
    assert m.max_concurrent_sequences == min(m.kv_cache_bytes // per_seq, 256)
    assert m.fits


def test_llama_cpp_partial_offload_moves_layers_to_cpu():
    full = memory(engine="llama.cpp", quant="q4_k_m")
    half = memory(engine="llama.cpp", quant="q4_k_m", gpu_layers=16)
    assert half.weights_bytes < full.weights_bytes / 2 + 0.6 * GIB
    assert half.cpu_bytes > 2 * GIB


@settings(max_examples=25, deadline=None)
@given(batch=st.integers(1, 64), context=st.integers(16, 32768), engine=st.sampled_from(["hf", "llama.cpp"]))
def test_memory_grows_with_batch_and_context(batch, context, engine):
    base = memory(engine=engine, batch=batch, context=context)
    assert memory(engine=engine, batch=batch + 1, context=context).total_bytes >= base.total_bytes
    assert memory(engine=engine, batch=batch, context=context + 16).total_bytes >= base.total_bytes


def test_limits_are_consistent_with_fits():
    device = CATALOG.device("rtx-4090")
    e = estimate_inference(LLAMA, device, InferenceConfig(weights="q4_k_m", engine="llama.cpp", batch=4))
    assert e.memory.fits
    at_limit = inference_memory(LLAMA, resolve("llama.cpp", device), MemoryConfig(
        batch=4, context=e.max_context, prompt=512, weights=get_format("q4_k_m")))
    assert at_limit.fits or e.max_context == LLAMA.max_context
    beyond = inference_memory(LLAMA, resolve("llama.cpp", device), MemoryConfig(
        batch=e.max_batch + 1, context=640, prompt=512, weights=get_format("q4_k_m")))
    assert not beyond.fits


def test_decode_is_memory_bound_and_ranges_are_ordered():
    e = estimate_inference(LLAMA, CATALOG.device("h100"), InferenceConfig(weights="bf16", engine="vllm"))
    assert e.decode.bound == "memory" and e.prefill.bound == "compute"
    t = e.decode.latency_s
    assert t.low <= t.typical <= t.high
    # one token reads ~16 GB of weights; at 3.35 TB/s that is >= 4.8 ms
    assert t.low >= 16e9 / 3.35e12


def test_tensor_parallel_shards_weights_and_adds_communication():
    one = estimate_inference(load_model("llama-3.1-70b"), CATALOG.device("h100"), InferenceConfig(engine="vllm"))
    four = estimate_inference(load_model("llama-3.1-70b"), CATALOG.device("h100"),
                              InferenceConfig(engine="vllm", gpus=4))
    assert four.memory.weights_bytes == pytest.approx(one.memory.weights_bytes / 4, rel=0.02)
    assert four.decode.latency_s.typical < one.decode.latency_s.typical
    assert not one.memory.fits and four.memory.fits


def test_tp_must_divide_heads():
    from sizeup.errors import ConfigError

    with pytest.raises(ConfigError, match="does not divide the 32 attention heads"):
        estimate_inference(LLAMA, CATALOG.device("h100"), InferenceConfig(gpus=3))
