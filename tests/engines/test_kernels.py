"""The kernel table (data/efficiency/kernels.yaml): which matrix kernel llama.cpp runs, and what it reaches.

Golden facts from ggml-org/llama.cpp ggml/src/ggml-cuda/mmq.cu `ggml_cuda_should_use_mmq` (read 2026-12-03):
quantized weights on int8-mma cards use MMQ at every batch above MMVQ's 8 columns; F16 weights go to cuBLAS."""

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.price.efficiency import tensor_fraction
from sizeup.engines import resolve
from sizeup.engines.kernels import kernel_peak, select_kernel
from sizeup.price.execution import phase_efficiency
from sizeup.workload.quantize import get_format


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(include_user=False)


def test_quantized_prefill_on_cuda_runs_mmq_at_the_int8_peak(catalog):
    k = select_kernel("llama.cpp", "q4_k_m", catalog.device("h100-pcie-80gb"), False, 512)
    assert k.name == "cuda-mmq" and k.peak == "int8"
    assert kernel_peak(catalog.device("h100-pcie-80gb"), k) == catalog.device("h100-pcie-80gb").peak_flops_per_s["int8"]
    assert 0 < k.fraction.low <= k.fraction.typical <= k.fraction.high <= 1


def test_f16_prefill_runs_cublas_at_the_fp16_accumulate_peak(catalog):
    d = catalog.device("rtx-3090")
    k = select_kernel("llama.cpp", "f16", d, False, 512)
    assert k.name == "cuda-cublas-f16"
    assert kernel_peak(d, k) == d.fp16_acc16_flops_per_s > d.peak_flops_per_s["fp16"]  # GeForce: acc16 is 2x


def test_decode_batch_is_mmvq_and_keeps_the_device_default(catalog):
    """F16 decode (MMVF) has no dequantization: the device's matmul default; quantized MMVQ prices its
    dequantization on the integer ALU (test_mmvq_dequantization_is_an_integer_alu_term_per_weight_and_column)."""
    d = catalog.device("a100-sxm-80gb")
    k = select_kernel("llama.cpp", "f16", d, True, 1)
    assert k.name == "mmvq" and k.fraction is None and k.memory is not None
    eff = phase_efficiency(resolve("llama.cpp", d), True, get_format("f16"), 1)
    assert eff.tensor["matmul"] == phase_efficiency(resolve("vllm", d), True, get_format("f16"), 1).tensor["matmul"]
    assert select_kernel("llama.cpp", "q4_k_m", d, True, 1).peak == "int32"


def test_apple_prefill_is_metal_at_the_soc_default(catalog):
    k = select_kernel("llama.cpp", "q4_0", catalog.device("apple-m2-ultra"), False, 512)
    assert k.name == "metal-simdgroup" and k.fraction is None


def test_mmq_prefill_matmul_runs_far_below_the_fp16_tensor_peak(catalog):
    """H100 PCIe llama-bench pp512 Llama-3-8B Q4_K_M: 8,125 tok/s (XiongjieDai, May 2024) x ~16 GFLOP/token
    is ~130 TFLOP/s, 17% of the 756 TFLOP/s fp16 peak; the generic cuBLAS default (72%) made it 29,068. A current
    build (int8 tensor-core MMQ since PR #8075) runs x1.38 of it: still under half the peak."""
    d = catalog.device("h100-pcie-80gb")
    eff = phase_efficiency(resolve("llama.cpp", d, build_date="2024-05-15"), False, get_format("q4_k_m"), 512)
    assert 0.15 <= tensor_fraction(eff, "matmul", "fp16").typical <= 0.25
    now = phase_efficiency(resolve("llama.cpp", d), False, get_format("q4_k_m"), 512)
    assert 0.2 <= tensor_fraction(now, "matmul", "fp16").typical <= 0.5
    other = phase_efficiency(resolve("vllm", d), False, get_format("q4_k_m"), 512)
    assert tensor_fraction(other, "matmul", "fp16").typical > 0.5  # no table entry: the device default


def test_cpu_and_unknown_engines_have_no_kernel(catalog):
    cpu = next(d for d in catalog.devices.values() if d.kind == "cpu")
    assert select_kernel("llama.cpp", "q4_k_m", cpu, False, 512) is None
    assert select_kernel("hf", "q4_k_m", catalog.device("a100-sxm-80gb"), False, 512) is None


def test_batch1_decode_reaches_less_of_hbm_than_of_gddr_or_apple_lpddr(catalog):
    """llama.cpp tg on the tuned rows: A100/H100 (HBM) reach ~70% of peak bandwidth at batch 1, GDDR6X cards
    and Apple's unified LPDDR ~90% (kernels.yaml mmvq.memory_by_class)."""
    fmt = get_format("q4_k_m")
    hbm = phase_efficiency(resolve("llama.cpp", catalog.device("a100-sxm-80gb")), True, fmt, 1).memory.typical
    gddr = phase_efficiency(resolve("llama.cpp", catalog.device("rtx-3090")), True, fmt, 1).memory.typical
    lpddr = phase_efficiency(resolve("llama.cpp", catalog.device("apple-m2-ultra")), True, fmt, 1).memory.typical
    assert hbm < 0.75 < 0.85 < gddr and lpddr > 0.85
    # another engine, or a batch above MMVQ's 8 columns, keeps the device default
    assert phase_efficiency(resolve("vllm", catalog.device("a100-sxm-80gb")), True, fmt, 1).memory.typical == 0.85
    assert phase_efficiency(resolve("llama.cpp", catalog.device("a100-sxm-80gb")), True, fmt, 16).memory.typical == 0.85


def test_rdna3_prefill_splits_mmq_and_rocblas_by_format_and_batch(catalog):
    """mmq.cu on RDNA3: Q2_K/Q6_K (PR #18537) go to dequantize + rocBLAS above 64 columns, the other
    quantized formats run WMMA-MMQ; both fractions are of the fp16 WMMA peak (RDNA3 int8 WMMA runs at that rate)."""
    d = catalog.device("rx-7900-xtx")
    assert select_kernel("llama.cpp", "q6_k", d, False, 512).name == "hip-rocblas"
    assert select_kernel("llama.cpp", "f16", d, False, 512) is None  # rocBLAS without a dequantize pass: the default
    mmq = select_kernel("llama.cpp", "q4_k_m", d, False, 512)
    assert mmq.name == "hip-mmq-wmma" and kernel_peak(d, mmq) == d.peak_flops_per_s["fp16"]
    assert select_kernel("llama.cpp", "q6_k", d, False, 32).name == "hip-mmq-wmma"  # below rocBLAS's 64 columns


def test_amd_kernels_stay_off_other_amd_architectures(catalog):
    """The HIP entries were fit on RDNA3 only: CDNA (MI300X) keeps the device default, not a borrowed fraction."""
    assert select_kernel("llama.cpp", "q4_k_m", catalog.device("mi300x"), False, 512) is None


def test_arc_prefill_is_sycl_dequantize_and_onednn(catalog):
    for name in ("arc-b580", "arc-a770-16gb"):
        k = select_kernel("llama.cpp", "q4_k_m", catalog.device(name), False, 512)
        assert k.name == "sycl-onednn-dequant-gemm" and k.peak == "fp16"
    assert "derived" in select_kernel("llama.cpp", "q4_0", catalog.device("arc-a770-16gb"), False, 512).basis


def test_mmvq_dequantization_is_an_integer_alu_term_per_weight_and_column(catalog):
    """Decode = max(bytes / bandwidth, weights x batch x integer ops per weight / integer rate): the matmul
    fraction is 2 / ops matmul FLOPs per integer op (vecdotq.cuh counts), on GA10x's 64 int32 lanes of 128."""
    from sizeup.engines.kernels import int32_rate

    d = catalog.device("rtx-3090")
    k = select_kernel("llama.cpp", "q2_k", d, True, 1)
    assert k.peak == "int32" and k.memory is not None
    assert k.fraction.typical == pytest.approx(2 / 2.9)
    assert int32_rate(d) == pytest.approx(d.vector_flops_per_s["fp32"] / 2 * 0.5)
    assert int32_rate(catalog.device("a100-sxm-80gb")) == pytest.approx(19.5e12 / 2)  # GA100: 64 + 64 per SM
    eff = phase_efficiency(resolve("llama.cpp", d), True, get_format("q2_k"), 8)
    # a decode matmul's FLOPs / (fraction x fp16 peak) = weights x batch x 2.9 / the integer rate
    weights, batch = 4096 * 14336, 8
    seconds = 2 * weights * batch / (eff.tensor["matmul"].typical * d.peak_flops_per_s["fp16"])
    assert seconds == pytest.approx(weights * batch * 2.9 / int32_rate(d))
    assert select_kernel("llama.cpp", "f16", d, True, 1).fraction is None  # no dequantization for F16
    assert select_kernel("llama.cpp", "q4_k_m", catalog.device("apple-m2-ultra"), True, 1).fraction is None


def test_dequantization_makes_batch8_q4_0_decode_slower_than_its_memory_bound(catalog):
    """Check rows (inference_measurements_mmvq_batch.yaml, PR #15802: RTX 3090 Q4_0 at microbatch 1-8): measured
    tokens per column fall 155 -> 71 t/s from 1 to 8 columns while the weight bytes per step stay the same; the ALU
    term moves the batch-8 prediction from +59% to about +35% without a fitted factor."""
    from sizeup.ingest.hf_config import load_model
    from sizeup.workload.inference import InferenceConfig, estimate_inference

    arch, d = load_model("llama-3-8b"), catalog.device("rtx-3090")

    def per_seq(batch):
        cfg = InferenceConfig(batch=batch, prompt=256, output=2, weights="q4_0", engine="llama.cpp")
        return estimate_inference(arch, d, cfg, limits=False).decode.tokens_per_s.typical / batch

    assert per_seq(8) / 71.33 - 1 < 0.45
    assert per_seq(8) < 0.9 * per_seq(1)


def test_jetson_orin_mmvq_streams_at_ga10bs_own_fraction_not_apples(catalog):
    """memory_by_class `lpddr@ampere-ga10b` (MLC's tuned AGX Orin row, 0.740) before the class's Apple figure; a read
    kernel on an AGX Orin 64GB in MAXN reaches 152.8 of 204.8 GB/s (ApxInf doc/jetson-roofline.md, PR #74), 1% away,
    and its copy kernel 183.3 GB/s read+write, the high end."""
    orin = select_kernel("llama.cpp", "q4_0", catalog.device("jetson-agx-orin-64gb"), decode=True, batch_tokens=1)
    mac = select_kernel("llama.cpp", "q4_0", catalog.device("apple-m2-ultra"), decode=True, batch_tokens=1)
    assert orin.memory.typical == pytest.approx(0.74) and mac.memory.typical == pytest.approx(0.90)
    assert orin.memory.typical == pytest.approx(152.8 / 204.8, rel=0.01)
    assert orin.memory.high == pytest.approx(183.3 / 204.8, abs=1e-3)


def test_orin_mmvq_dequantization_scales_with_the_power_mode(catalog):
    """GA10B's int32 lanes are listed, so a power mode's SMs x clock (the vector peak) sets MMVQ's integer rate."""
    maxn = select_kernel("llama.cpp", "q4_k_m", catalog.device("jetson-agx-orin-64gb"), decode=True, batch_tokens=1)
    assert maxn.peak == "int32"
    full = kernel_peak(catalog.device("jetson-agx-orin-64gb"), maxn)
    low = kernel_peak(catalog.device("jetson-agx-orin-64gb-15w"), maxn)
    assert low / full == pytest.approx(6 * 408 / (16 * 1300), rel=1e-3)  # nvpmodel 15W: 6 SMs at 408 MHz


def test_mmq_of_builds_since_pr_8075_is_the_may_2024_fraction_times_the_measured_speedup(catalog):
    """The cuda-mmq fractions were fit on May 2024 builds (dequantize + FP16 cuBLAS at pp512); from PR #8075
    (2024-06-24) int8 tensor-core MMQ runs: x1.38 on Ada (PR #7676 RTX 4090 Q4_0 ub512 x1.33, PR #8062 x1.04), no
    gain on GA10x (PR #8062's RTX 3090 MMQ against the May 2024 cuBLAS row), their median elsewhere."""
    def typical(device, build=None, weights="q4_k_m"):
        return select_kernel("llama.cpp", weights, catalog.device(device), False, 512, build_date=build).fraction

    may, june, now = typical("rtx-4090", "2024-05-15"), typical("rtx-4090", "2024-06-24"), typical("rtx-4090")
    assert may.typical == pytest.approx(0.145) and now == june
    assert june.typical == pytest.approx(0.145 * 1.38) and june.low == pytest.approx(may.low * 1.33)
    assert june.high == pytest.approx(may.high * 1.44)
    assert typical("rtx-3090").typical == pytest.approx(typical("rtx-3090", "2024-05-15").typical)
    assert typical("h100-pcie-80gb").typical == pytest.approx(typical("h100-pcie-80gb", "2024-05-15").typical * 1.19)
    assert "PR #8075" in select_kernel("llama.cpp", "q4_k_m", catalog.device("rtx-4090"), False, 512).basis
    assert typical("rtx-4090", weights="f16") == typical("rtx-4090", "2024-05-15", "f16")  # cuBLAS F16: unchanged
