"""A decode step's KV-cache read (the attention op's `weight_bytes`, ingest/transformer_ops.py) priced at the engine's
decode attention kernel's own share of the bandwidth (Efficiency.attention_memory, set by price/execution.py from the
execution model's `decode_attention_memory`), never above the phase's memory fraction, in both the scalar
(rates.price_totals) and the vectorised (roofline.price) paths."""

from dataclasses import replace

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.ledger import Ledger, OpKind, OpRecord
from sizeup.engines.base import engine_class
from sizeup.price.efficiency import default_efficiency
from sizeup.price.execution import phase_efficiency
from sizeup.price.rates import price_totals
from sizeup.price.roofline import price
from sizeup.ranges import Range
from sizeup.workload.quantize import get_format

GIB = 2**30


@pytest.fixture(scope="module")
def h100():
    return load_catalog().device("h100-sxm-80gb")


def _attention(cache: int, written: int = 0) -> OpRecord:
    return OpRecord(op="attention", kind=OpKind.ATTENTION, scope="a", flops=10**6, matmul_flops=10**6,
                    bytes_read=GIB, bytes_written=written, weight_bytes=cache, dtype="bf16")


def test_vllm_decode_carries_its_sourced_kernel_share_and_prefill_does_not(h100):
    vllm = engine_class("vllm").build(h100, "0.6.7")
    decode = phase_efficiency(vllm, True, get_format("bf16"), 1)
    assert decode.attention_memory is not None and decode.attention_memory.typical < decode.memory.typical
    assert phase_efficiency(vllm, False, get_format("bf16"), 512).attention_memory is None
    mi300x = load_catalog().device("mi300x")  # ROCm's custom paged attention: no figure read
    assert phase_efficiency(engine_class("vllm").build(mi300x, "0.6.7"), True, get_format("fp8"), 1).attention_memory is None


def test_an_engine_without_a_measured_decode_attention_kernel_keeps_the_memory_fraction(h100):
    """TensorRT-LLM's XQA kernel: no bandwidth figure read, so its decode KV read moves as every other byte."""
    trt = engine_class("tensorrt-llm").build(h100)
    assert phase_efficiency(trt, True, get_format("fp8"), 1).attention_memory is None


def test_kv_cache_bytes_move_at_the_attention_share(h100):
    eff = replace(default_efficiency("gpu"), attention_memory=Range(0.47, 0.55, 0.73))
    plain = replace(eff, attention_memory=None)
    ledger = Ledger(ops=[_attention(GIB)])
    base, roof = price(ledger, h100, plain), price(ledger, h100, eff)
    ratio = eff.memory.typical / eff.attention_memory.typical
    assert roof.time["typical"][0] == pytest.approx(base.time["typical"][0] * ratio, rel=1e-6)
    assert price_totals(ledger, h100, eff).total_s.typical == pytest.approx(float(roof.time["typical"][0]), rel=1e-6)


def test_only_the_cache_part_is_slowed(h100):
    """Half the op's bytes are the cache: the other half (queries, outputs) moves at the memory fraction."""
    eff = replace(default_efficiency("gpu"), memory=Range(0.8, 0.8, 0.8), attention_memory=Range(0.4, 0.4, 0.4))
    ledger = Ledger(ops=[_attention(GIB // 2)])
    base = price(ledger, h100, replace(eff, attention_memory=None))
    assert price(ledger, h100, eff).time["typical"][0] == pytest.approx(base.time["typical"][0] * 1.5, rel=1e-6)


def test_ops_without_a_cache_read_and_other_kinds_are_unchanged(h100):
    eff = replace(default_efficiency("gpu"), attention_memory=Range(0.47, 0.55, 0.73))
    plain = replace(eff, attention_memory=None)
    prefill = Ledger(ops=[_attention(0)])
    matmul = Ledger(ops=[OpRecord(op="linear", kind=OpKind.MATMUL, scope="l", flops=10**6, matmul_flops=10**6,
                                  bytes_read=GIB, weight_bytes=GIB, dtype="bf16")])
    for ledger in (prefill, matmul):
        assert price(ledger, h100, eff).time["typical"][0] == pytest.approx(price(ledger, h100, plain).time["typical"][0])


def test_never_faster_than_the_phase_memory_fraction(h100):
    """An engine whose decode phase reaches a lower share of the bandwidth than the attention figure keeps its own."""
    eff = replace(default_efficiency("gpu"), memory=Range(0.3, 0.3, 0.3), attention_memory=Range(0.5, 0.55, 0.7))
    ledger = Ledger(ops=[_attention(GIB)])
    base = price(ledger, h100, replace(eff, attention_memory=None))
    assert price(ledger, h100, eff).time["typical"][0] == pytest.approx(base.time["typical"][0])
