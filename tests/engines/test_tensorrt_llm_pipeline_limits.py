"""TensorRT-LLM's batch limits under pipeline parallelism (Batching.limits_per_micro_batch): the in-flight batcher keeps
pp_size micro-batches in flight, its capacity scheduler sized max_batch_size x micro-batches and each micro-batch
scheduled within max_batch_size and max_num_tokens (trtGptModelInflightBatching.cpp), so `--pp 2` admits twice the
requests a `--pp 1` engine of the same limits does; and `--engine-opt kv-cache-free-gpu-memory-fraction` (an MLPerf
configuration's kvcache_free_gpu_mem_frac) sizes the KV pool."""

import pytest

from sizeup import api
from sizeup.engines.base import engine_settings

BASE = dict(device="h100-sxm-80gb", engine="tensorrt-llm", quant="fp8", kv_dtype="fp8", prompt=222, output=294,
            offline=True)


def _load(**kw):
    est = api.estimate("llama-2-70b", api.EstimateOptions(**{**BASE, **kw}))
    return est.under_load


def test_the_batch_cap_binds_each_micro_batch():
    opts = ("offline", "max-batch-size=128", "max-num-tokens=8192")
    one = _load(gpus=2, engine_options=opts)
    two = _load(gpus=2, pp=2, engine_options=opts)
    assert one.capacity == 128  # max_batch_size binds below the KV cache of two H100s
    assert two.capacity == 256 and "max_sequences" in " ".join(two.assumptions)


def test_the_token_budget_binds_each_micro_batch():
    opts = ("offline", "max-batch-size=4096", "max-num-tokens=256")
    one, two = _load(gpus=2, engine_options=opts), _load(gpus=2, pp=2, engine_options=opts)
    assert one.capacity == int(256 * 294 / (222 + 294))
    assert two.capacity == int(512 * 294 / (222 + 294))


def test_the_kv_fraction_option_sizes_the_pool():
    assert engine_settings("tensorrt-llm", ("kv-cache-free-gpu-memory-fraction=0.95",)) == {
        "kv_free_gpu_memory_fraction": 0.95}
    small = _load(gpus=2, engine_options=("offline", "kv-cache-free-gpu-memory-fraction=0.5"))
    large = _load(gpus=2, engine_options=("offline", "kv-cache-free-gpu-memory-fraction=0.95"))
    assert large.capacity == pytest.approx(small.capacity * 0.95 / 0.5, rel=0.02)
