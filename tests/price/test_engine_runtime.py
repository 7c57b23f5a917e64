"""The plain TensorRT engine profile (engines.yaml `tensorrt`) runs as overheads.yaml's TensorRT runtime:
its per-op host time, its fused norm/elementwise kernels, no serving-executor step."""

from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model
from sizeup.price.engines import get_engine
from sizeup.price.overhead import get_runtime
from sizeup.workload.inference import InferenceConfig, estimate_inference, phase_efficiency
from sizeup.workload.quantize import get_format


def test_tensorrt_engine_names_the_tensorrt_runtime_and_no_step_overhead():
    engine = get_engine("tensorrt")
    assert engine.runtime == "tensorrt"
    assert engine.range("step_overhead_s") is None
    assert get_engine("tensorrt-llm").runtime is None  # TRT-LLM keeps its PyTorch-executor profile


def test_tensorrt_engine_takes_the_runtime_per_op_cost_at_both_phases():
    device = load_catalog(include_user=False).device("a100-sxm-40gb")
    per_op = get_runtime("tensorrt").per_op_s
    for decode in (False, True):
        eff = phase_efficiency(device, get_engine("tensorrt"), decode, get_format("fp16"), 128)
        assert eff.overhead_s == per_op


def test_bert_base_batch1_is_bounded_by_the_fused_kernel_count():
    """BERT-base at batch 1, 128 tokens on an A100: every kernel is shorter than the host's enqueue, so the
    forward takes about kernels × per-op time. Fused: 3 embedding gathers, 12 × (4 projections + 2 MLP +
    attention), the pooler = 88 matrix kernels, plus the 25 layer norms (the embedding's and 2 per layer),
    which reduce over a row and stay kernels of their own: 113, instead of 151 (the adds and GELU fold away)."""
    arch = load_model("bert-base-uncased")
    device = load_catalog(include_user=False).device("a100-sxm-40gb")
    per_op = get_runtime("tensorrt").per_op_s.typical
    trt = estimate_inference(arch, device, InferenceConfig(batch=1, prompt=128, output=0, weights="fp16",
                                                           engine="tensorrt"), limits=False)
    llm = estimate_inference(arch, device, InferenceConfig(batch=1, prompt=128, output=0, weights="fp16",
                                                           engine="tensorrt-llm"), limits=False)
    assert 113 * per_op <= trt.prefill.latency_s.typical <= 113 * per_op * 1.2
    assert trt.prefill.latency_s.typical < llm.prefill.latency_s.typical / 3
