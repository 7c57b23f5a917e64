"""The plain TensorRT engine (engines/tensorrt.py, data/engines/tensorrt.yaml) runs as overheads.yaml's TensorRT
runtime: its per-op host time, its fused norm/elementwise kernels, no serving-executor step."""

from sizeup.engines import resolve
from sizeup.engines.runtimes import get_runtime
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model
from sizeup.price.execution import phase_efficiency
from sizeup.workload.inference import InferenceConfig, estimate_inference
from sizeup.workload.quantize import get_format

A100 = load_catalog(include_user=False).device("a100-sxm-40gb")


def test_tensorrt_engine_names_the_tensorrt_runtime_and_no_step_overhead():
    engine = resolve("tensorrt", A100)
    assert engine.runtime == get_runtime("tensorrt")
    assert engine.step_overhead(load_model("bert-base-uncased"), decode=False) is None
    assert resolve("tensorrt-llm", A100).runtime is None  # TRT-LLM keeps its PyTorch-executor profile


def test_tensorrt_engine_takes_the_runtime_per_op_cost_at_both_phases():
    per_op = get_runtime("tensorrt").per_op_s
    for decode in (False, True):
        eff = phase_efficiency(resolve("tensorrt", A100), decode, get_format("fp16"), 128)
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
    # TensorRT-LLM's unfused path launches more kernels at its own per-kernel time: over twice as long (2.6x since
    # runtimes.tensorrt's per-kernel enqueue went 4.0 -> 7.0 us, derived from trtexec's enqueue time; 3x before)
    assert trt.prefill.latency_s.typical < llm.prefill.latency_s.typical / 2
