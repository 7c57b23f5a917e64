"""ExecutionModel.as_run: the model as an engine runs it (engines/as_run.py): MLA's latent cache by engine release,
vLLM's `mla_latent_cache` (V0 from 0.7.1) and `mla_latent_cache.v1` (V1 from 0.8); the planner's memory check asks
the same hook as the estimate."""

import pytest

from sizeup.engines import resolve
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model
from sizeup.price.memory import kv_bytes_per_sequence


@pytest.fixture(scope="module")
def h200():
    return load_catalog().device("h200-sxm-141gb")


@pytest.fixture(scope="module")
def r1():
    return load_model("deepseek-r1")


def _layout(model, arch, tp: int = 1):
    """The arch as `model` runs it, and its one sentence (None: as the config)."""
    _, arch, notes = model.as_run(arch, tp)
    return arch, (notes[0] if notes else None)


def _expanded(arch) -> bool:
    return all(layer.attention.mla.expanded_v_dim for layer in arch.layers)


def test_vllm_before_0_7_1_caches_deepseek_per_head(h200, r1):
    # vllm deepseek_v2.py DeepseekV2Attention (no MLA): v padded to qk_head_dim 192, 128 heads of K and V cached
    arch, note = _layout(resolve("vllm@0.7.0", h200), r1)
    assert _expanded(arch) and "multi-head" in note
    assert arch.kv_elements_per_token(arch.layers[0]) == 128 * (192 + 192)
    latent, _ = _layout(resolve("vllm@0.7.1", h200), r1)
    assert latent is r1 and latent.kv_elements_per_token(latent.layers[0]) == 512 + 64


def test_vllm_v1_had_mla_only_from_0_8(h200, r1):
    # PR 13789 (MLA for V1) came after 0.7.3: a 0.7.x V1 run is multi-head, 0.8 on latent
    v1 = {"v1_engine": 1.0}
    from sizeup.engines.base import engine_class
    cls = engine_class("vllm")
    assert _expanded(_layout(cls.build(h200, "0.7.3", settings=v1), r1)[0])
    assert not _expanded(_layout(cls.build(h200, "0.7.3"), r1)[0])  # V0 at 0.7.3: latent
    assert _layout(cls.build(h200, "0.8.0"), r1)[1] is None


def test_the_per_head_cache_is_about_ten_times_the_latent_per_gpu_at_tp8(h200, r1):
    # neuralmagic.com "Enhancing DeepSeek Models with MLA and FP8 Optimizations in vLLM" (2025-02-04): on 8 x H200
    # 54,560 tokens of KV cache before MLA, 512,000 with it (9.4x; the post rounds to ~9.6x); here 750 KB a token a GPU
    # (16 heads x 384 x 61 layers x 2 B) against 70 KB (576 x 61 x 2 B, whole on every rank)
    expanded, _ = _layout(resolve("vllm@0.7.0", h200), r1)
    mha = kv_bytes_per_sequence(expanded, 1000, "bf16", tp=8) / 1000
    mla = kv_bytes_per_sequence(r1, 1000, "bf16", tp=8) / 1000
    assert mha == pytest.approx(16 * 384 * 61 * 2)
    assert mla == pytest.approx(576 * 61 * 2)
    assert 9 < mha / mla < 12


def test_a_decode_step_reads_the_per_head_cache(r1):
    from sizeup.formats import get_format
    from sizeup.engines.as_run import expand_mla
    from sizeup.ingest.transformer_ops import Step, step_ledger

    step = Step(batch=32, new_tokens=1, context=1000)
    latent = step_ledger(r1, step, get_format("fp8"), "bf16", "bf16", 8)
    mha = step_ledger(expand_mla(r1), step, get_format("fp8"), "bf16", "bf16", 8)
    read = lambda ledger: sum(op.bytes_read for op in ledger.ops if op.op == "attention")
    # 32 x 1000 tokens x 16 heads x 384 x 2 B per layer against 32 x 1000 x 576 x 2 B: 10.7x
    assert read(mha) / read(latent) == pytest.approx(16 * 384 / 576, rel=0.02)


def test_an_engine_without_the_key_keeps_the_latent_cache(h200, r1):
    arch, note = _layout(resolve("tensorrt-llm", h200), r1)
    assert arch is r1 and note is None


def test_the_estimate_says_so_and_prices_the_larger_cache(r1):
    from sizeup.api import estimate
    old = estimate("deepseek-r1", device="h200-sxm-141gb", gpus=8, engine="vllm@0.7.0", quant="fp8", prompt=1024,
                   output=120)
    new = estimate("deepseek-r1", device="h200-sxm-141gb", gpus=8, engine="vllm@0.7.1", quant="fp8", prompt=1024,
                   output=120)
    assert any("multi-head latent attention as multi-head" in a for a in old.assumptions)
    assert not any("multi-head latent attention as multi-head" in a for a in new.assumptions)
    # the request's own cache: 16 heads x 384 per GPU against the 576-element latent on every GPU (10.7x)
    assert old.memory.kv_cache_needed_bytes / new.memory.kv_cache_needed_bytes == pytest.approx(16 * 384 / 576, rel=0.01)
    assert old.memory.max_concurrent_sequences == 56 < new.memory.max_concurrent_sequences  # 256: max_num_seqs
