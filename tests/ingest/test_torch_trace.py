"""Tracing on fake tensors: golden values from the reference write-ups and hand formulas."""

import pytest

pytest.importorskip("torch")

from sizeup.errors import IngestError  # noqa: E402
from sizeup.examples import zoo  # noqa: E402
from sizeup.ingest.torch_trace import InputSpec, TraceMode, trace_module  # noqa: E402


def trace(factory, *shape, mode=TraceMode.INFERENCE, **kw):
    return trace_module(factory, [InputSpec(shape=shape)], mode=mode, **kw)


def conv_flops(ledger, scope):
    return sum(o.matmul_flops for o in ledger.ops if o.scope == scope and o.kind.value == "conv")


def test_c2f_conv_flops_match_the_reference_write_up():
    ledger = trace(zoo.c2f, 1, 64, 64, 64)
    # reference write-up, section 2.2, step 2: 2 × C_in·C_out·k² × H·W per conv
    assert conv_flops(ledger, "cv1.conv") == 67_108_864
    assert conv_flops(ledger, "m.0.cv1.conv") == 301_989_888
    assert conv_flops(ledger, "m.0.cv2.conv") == 301_989_888
    assert conv_flops(ledger, "cv2.conv") == 201_326_592
    assert ledger.by_kind()["conv"].flops == 872_415_232
    # BN, SiLU and the residual add are counted separately, by their stated conventions
    scopes = ledger.by_scope()
    assert scopes["cv1.bn"].flops == 4 * 128 * 64 * 64  # eval-mode batch norm: 4 per element
    assert scopes["cv1.act"].flops == 5 * 128 * 64 * 64  # SiLU: 5 per element
    residual = [o for o in ledger.ops if o.scope == "m.0" and o.op == "aten.add"]
    assert len(residual) == 1 and residual[0].flops == 64 * 64 * 64
    assert ledger.params == 107_264
    assert scopes[""].params == ledger.params


def test_depthwise_c2f_cuts_flops_60_percent_and_intensity_falls():
    dense = trace(zoo.c2f, 1, 64, 64, 64)
    dws = trace(zoo.c2f_depthwise, 1, 64, 64, 64)
    # each 3×3 conv (301,989,888) becomes depthwise 2·64·9·4096 + pointwise 2·64·64·4096
    assert dws.by_kind()["conv"].flops == 67_108_864 + 2 * (2 * 64 * 9 * 4096 + 2 * 64 * 64 * 4096) + 201_326_592
    cut = 1 - dws.totals().flops / dense.totals().flops
    assert 0.55 < cut < 0.65
    dense_m, dws_m = dense.by_scope()["m"], dws.by_scope()["m"]
    assert dws_m.arithmetic_intensity < dense_m.arithmetic_intensity / 3


def llama_block_flops(b, s, h, heads, kv_heads, inter, d):
    """Hand formula for zoo.LlamaBlock by sizeup's conventions (docstrings of sizeup.ops)."""
    t = b * s
    kv = kv_heads * d
    projections = 2 * t * h * (h + 2 * kv + h)
    mlp = 3 * 2 * t * h * inter
    attention_products = 2 * 2 * b * heads * s * s * d  # Q·Kᵀ and P·V over the query heads
    softmax = 5 * b * heads * s * s
    half = d // 2
    rope_tables = half * (1 + 3 + 1 + 1) + s * half + 2 * s * d  # div, pow, reciprocal, mul; outer; cos, sin
    rms = 2 * (4 * t * h + 3 * t)  # two RMSNorms: x², mean (+1 per row), +eps, rsqrt, ×rstd, ×w
    rope = 3.5 * t * h + 3.5 * t * kv  # q·cos + rotate_half(q)·sin (neg on half), for q and k
    residual = 2 * t * h
    swiglu = 5 * t * inter + t * inter  # SiLU + gate·up
    return projections + mlp, attention_products, int(projections + mlp + attention_products + softmax
                                                       + rope_tables + rms + rope + residual + swiglu)


def test_llama_block_matches_hand_formula():
    ledger = trace(zoo.llama_block, 1, 128, 512)
    matmuls, attention, total = llama_block_flops(1, 128, 512, 8, 2, 1376, 64)
    kinds = ledger.by_kind()
    assert kinds["matmul"].flops == matmuls
    assert kinds["attention"].matmul_flops == attention
    assert ledger.totals().flops == total
    assert ledger.uncounted_ops() == {}


def test_attention_products_counted_with_sdpa_or_matmul_softmax():
    sdpa = trace(zoo.llama_block, 2, 64, 512)
    unfused = trace(zoo.llama_block_matmul, 2, 64, 512)
    assert sdpa.totals().matmul_flops == unfused.totals().matmul_flops
    # the unfused path writes the score matrix to memory; the fused kernel does not
    assert unfused.totals().bytes_moved > sdpa.totals().bytes_moved


def test_flops_are_linear_in_batch():
    one = trace(zoo.c2f, 1, 64, 32, 32).totals()
    four = trace(zoo.c2f, 4, 64, 32, 32).totals()
    assert four.flops == 4 * one.flops
    assert four.matmul_flops == 4 * one.matmul_flops


def test_training_peak_memory_sums_its_categories():
    ledger = trace(zoo.c2f, 2, 64, 32, 32, mode=TraceMode.TRAIN)
    peak = ledger.memory_peak()
    assert sum(peak.by_category.values()) == peak.peak_bytes
    params = 107_264 * 4
    totals = ledger.memory_by_category()
    assert totals["parameter"] == params
    assert totals["gradient"] == params
    assert totals["optimizer_state"] == 2 * params  # AdamW: exp_avg and exp_avg_sq
    assert {p.value for p in (o.phase for o in ledger.ops)} == {"forward", "backward", "optimizer"}


def test_inference_memory_has_no_gradients():
    ledger = trace(zoo.c2f, 1, 64, 32, 32)
    peak = ledger.memory_peak()
    assert "gradient" not in peak.by_category and peak.by_category["parameter"] == 107_264 * 4


def test_backward_scopes_follow_the_module_tree():
    ledger = trace(zoo.c2f, 1, 64, 16, 16, mode=TraceMode.BACKWARD)
    backward_convs = {o.scope for o in ledger.ops if o.phase.value == "backward" and o.op == "aten.convolution_backward"}
    assert backward_convs == {"cv1.conv", "m.0.cv1.conv", "m.0.cv2.conv", "cv2.conv"}


def test_data_dependent_op_names_op_and_module(torch):
    class Gate(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(4, 4)

        def forward(self, x):
            y = self.proj(x)
            return y * 2 if y.sum().item() > 0 else y

    with pytest.raises(IngestError, match=r"aten\._local_scalar_dense.*''|depends on tensor values"):
        trace(Gate, 2, 4)


def test_rejected_input_is_an_ingest_error():
    with pytest.raises(IngestError, match="rejected input 1x3x8x8"):
        trace(zoo.c2f, 1, 3, 8, 8)


def test_bf16_trace_halves_bytes():
    fp32 = trace(zoo.c2f, 1, 64, 16, 16)
    bf16 = trace(zoo.c2f, 1, 64, 16, 16, dtype="bf16")
    assert bf16.totals().flops == fp32.totals().flops
    assert bf16.by_kind()["conv"].bytes_moved * 2 == fp32.by_kind()["conv"].bytes_moved


def test_llama_7b_forward_and_backward_on_fake_tensors():
    ledger = trace_module(zoo.llama_7b, [InputSpec(shape=(1, 256), dtype="int64")], dtype="bf16",
                          mode=TraceMode.BACKWARD)
    assert ledger.params == 6_738_415_616  # LLaMA-7B (Touvron et al. 2023): 6.7B
    fwd = ledger.by_phase()["forward"].matmul_flops
    # 2·N per token for the weight matmuls (embedding excluded: a lookup), plus attention products
    weights = ledger.params - 32000 * 4096 - 32 * 2 * 4096 - 4096
    attention = 32 * 2 * 2 * 32 * 256 * 256 * 128
    assert fwd == 2 * 256 * weights + attention
    assert ledger.memory_peak().by_category["gradient"] > 0
