"""torch.compile decoding (engines/torch_compile.py): CUDA-graph host times, the per-format GEMV's bandwidth share,
tinygemm's per-SM rate, compile time stated apart."""

import pytest

from sizeup.engines import resolve
from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model
from sizeup.workload.inference import InferenceConfig, estimate_inference


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def _decode(catalog, device: str, quant: str, engine: str = "torch-compile"):
    cfg = InferenceConfig(batch=1, prompt=6, output=200, weights=quant, engine=engine)
    return estimate_inference(load_model("llama-2-7b"), catalog.device(device), cfg, limits=False)


def test_aliases_and_release(catalog):
    assert resolve("gpt-fast", catalog.device("a100-sxm-80gb")).name == "torch-compile"
    assert resolve("torch.compile@2.4", catalog.device("a100-sxm-80gb")).version == "2.4"
    with pytest.raises(ConfigError, match="torch-compile releases"):
        resolve("torch-compile@1.13", catalog.device("a100-sxm-80gb"))


def test_decode_is_one_graph_launch_per_step_not_eager_python(catalog):
    compiled = _decode(catalog, "a100-sxm-80gb", "bf16")
    eager = _decode(catalog, "a100-sxm-80gb", "bf16", engine="hf")
    # hf pays ~3 ms of generate() Python and ~10 us per eager kernel per step; the graph replays in microseconds
    assert compiled.decode.latency_s.typical < eager.decode.latency_s.typical - 2e-3
    assert compiled.decode.bound == "memory"


def test_weight_format_kernels(catalog):
    bf16 = _decode(catalog, "a100-sxm-80gb", "bf16")
    int8 = _decode(catalog, "a100-sxm-80gb", "int8-wo")
    int4 = _decode(catalog, "a100-sxm-80gb", "int4-wo-g64")
    # int8 halves the bytes but its fused dequantizing GEMV reaches a smaller share of the bandwidth (0.543 vs 0.692)
    ratio = int8.decode.tokens_per_s.typical / bf16.decode.tokens_per_s.typical
    assert 1.4 < ratio < 1.75
    # tinygemm: 1.27e10 weights/s per SM x 108 SMs x 0.5625 B = 0.38 of the A100's 2.039 TB/s (below the 0.624 cap)
    note = next(a for a in int4.assumptions if "tinygemm-int4" in a)
    assert "memory at 38% of peak bandwidth" in note
    assert int4.decode.tokens_per_s.typical > int8.decode.tokens_per_s.typical


def test_tinygemm_capped_at_the_16bit_share_on_a_narrow_bus(catalog):
    # RTX 4090: 1.27e10 x 128 SMs x 0.5625 B = 0.91 TB/s > 0.872 x 1.008 TB/s: the 16-bit GEMV's share caps it
    e = _decode(catalog, "rtx-4090", "int4-wo-g64")
    assert any("tinygemm-int4" in a and "memory at 87% of peak bandwidth" in a for a in e.assumptions)


def test_weight_only_on_gddr_is_derived_and_said(catalog):
    e = _decode(catalog, "rtx-4090", "int8-wo")
    assert any("gemv-weight-only" in a for a in e.assumptions)
    eng = resolve("torch-compile", catalog.device("rtx-4090"))
    assert "derived" in eng.matrix_kernel("int8-wo", True, 1).basis


def _memory_share(catalog, device: str, quant: str):
    kernel = resolve("torch-compile", catalog.device(device)).matrix_kernel(quant, True, 1)
    return kernel.memory.typical, kernel.basis


def test_a100_and_h100_reach_different_shares_of_their_bandwidth(catalog):
    # each weight-only figure is its own architecture's tuned row (gpt-fast #207 A100 int8 158.68 tok/s -> 0.543;
    # torchao H100 fp8-wo 204.17 tok/s -> 0.490); the A100's 16-bit share is derived from the H100 16-bit fit
    # (0.624, torchao H100 bf16 133.44 tok/s) x 0.543 / 0.490, and the estimate's basis says so
    a100_wo, _ = _memory_share(catalog, "a100-sxm-80gb", "int8-wo")
    h100_wo, _ = _memory_share(catalog, "h100-sxm-80gb", "fp8-wo")
    assert a100_wo == pytest.approx(0.543) and h100_wo == pytest.approx(0.490)
    a100_16, basis = _memory_share(catalog, "a100-sxm-80gb", "bf16")
    h100_16, h100_basis = _memory_share(catalog, "h100-sxm-80gb", "bf16")
    assert h100_16 == pytest.approx(0.624) and "derived" not in h100_basis
    assert a100_16 == pytest.approx(0.624 * 0.543 / 0.490, rel=1e-3)
    assert "derived" in basis and "hopper" in basis
    # every A100 part shares the GA100's kernels and so its share
    assert _memory_share(catalog, "a100-pcie-40gb", "bf16")[0] == pytest.approx(a100_16)


def test_an_architecture_without_an_entry_takes_the_median_of_those_with_one(catalog):
    share, basis = _memory_share(catalog, "mi300x", "int8-wo")
    assert share == pytest.approx((0.543 + 0.490) / 2)
    assert "median" in basis and "ampere-ga100" in basis and "hopper" in basis
    # no 16-bit scaling without the architecture's own weight-only share: the class figure
    assert _memory_share(catalog, "mi300x", "bf16")[0] == pytest.approx(0.624)


def test_compile_time_is_stated_apart(catalog):
    e = _decode(catalog, "h100-sxm-80gb", "bf16")
    assert any("compile and warm-up" in a and "not in TTFT or tokens/s" in a for a in e.assumptions)


def test_weight_only_bytes_include_scales_and_the_lm_head():
    from sizeup.formats import get_format, tensor_bytes_map

    arch = load_model("llama-2-7b")
    sizes = tensor_bytes_map(arch, get_format("int4-wo-g64"))
    # q_proj 4096 x 4096: 4 bits per weight + (bf16 scale + bf16 zero) per 64 weights
    q = next(k for k in sizes if k == "layers.0.attn.q_proj.weight")
    assert sizes[q] == 4096 * 4096 // 2 + 4096 * 64 * 4
    head = next(k for k in sizes if k == "lm_head.weight")
    assert sizes[head] == 32000 * 4096 // 2 + 32000 * 64 * 4


def test_weight_only_formats_keep_the_16bit_segments_reserved(catalog):
    """torchao generate.py quantizes on the GPU after a bf16 load and reports torch.cuda.max_memory_reserved(): a
    weight-only format holds `quantized_on_device_reserved` x its weights beyond them (torch-compile.yaml, fit on the
    H100 fp8-wo row of torchao's float8_benchmark_results.txt: 11.83 GB reserved); bf16 holds nothing extra."""
    bf16 = _decode(catalog, "a100-sxm-80gb", "bf16").memory
    int8 = _decode(catalog, "a100-sxm-80gb", "int8-wo").memory
    share = resolve("torch-compile", catalog.device("a100-sxm-80gb")).profile.range("quantized_on_device_reserved")
    assert bf16.overhead_bytes == 0
    assert int8.overhead_bytes == int(share.typical * int8.weights_bytes) > 0
    assert 0.3 < share.typical < 0.45
    assert int8.total_bytes == int8.weights_bytes + int8.kv_cache_bytes + int8.activations_bytes + int8.overhead_bytes
