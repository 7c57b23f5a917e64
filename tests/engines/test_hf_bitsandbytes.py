"""bitsandbytes under transformers (engines/hf.py step_extra): LLM.int8()'s per-linear host time, 4-bit gemv at one
token and dequantize-then-16-bit-matmul above it."""

import pytest

from sizeup.engines import resolve
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model
from sizeup.workload.inference import InferenceConfig, estimate_inference


@pytest.fixture(scope="module")
def a10g():
    return load_catalog().device("a10g")


def _decode(device, quant: str, batch: int = 1, engine: str = "hf"):
    cfg = InferenceConfig(batch=batch, prompt=16, output=128, weights=quant, engine=engine)
    return estimate_inference(load_model("llama-2-7b"), device, cfg, limits=False)


def test_llm_int8_is_slower_than_fp16_not_faster(a10g):
    fp16, int8 = _decode(a10g, "fp16"), _decode(a10g, "int8-bnb")
    # 224 linears x 706 us of host time per step: several times slower than fp16 (the tuned rows: 27.0 vs 6.1 tok/s)
    assert int8.decode.tokens_per_s.typical < fp16.decode.tokens_per_s.typical / 3
    assert any("LLM.int8()" in a and "x 224 linears" in a for a in int8.assumptions)
    # hf's plain int8 is the same bitsandbytes path
    assert _decode(a10g, "int8").decode.latency_s == int8.decode.latency_s


def test_4bit_gemv_at_one_token_dequantize_above(a10g):
    one, eight = _decode(a10g, "nf4"), _decode(a10g, "nf4", batch=8)
    assert any("gemv_4bit" in a for a in one.assumptions)
    note = next(a for a in eight.assumptions if "dequantize_4bit" in a)
    # 6.48e9 quantized weights x 4 B written and read back per step
    assert "25.90 GB" in note
    fp16_8 = _decode(a10g, "fp16", batch=8)
    # at batch 8 the 16-bit copy makes NF4 slower than fp16, not 3.5x faster
    assert eight.decode.tokens_per_s.typical < fp16_8.decode.tokens_per_s.typical


def test_other_engines_and_formats_unchanged(a10g):
    model = resolve("vllm", a10g)
    assert model.step_extra(None, None, "int8", True, 1) is None
    hf = resolve("hf", a10g)
    assert hf.step_extra(None, None, "bf16", True, 1) is None


def test_bnb_fp4_prices_as_nf4(a10g):
    assert _decode(a10g, "bnb-fp4").decode.latency_s.typical == pytest.approx(
        _decode(a10g, "nf4").decode.latency_s.typical, rel=0.02)
