"""Devices added for issue 28 (MLPerf v5.x systems, Jetson Thor, Apple M5, Strix Halo): datasheet golden values,
the names users type, and the peaks derived from their architecture rows.

Sources (each device file carries the full citation):
- MI355X / MI350X: rocm.docs.amd.com reference/gpu-specs (256 CUs, 288 GiB, 256 MiB L3); AMD ISSCC 2026 paper as
  reported by world-today-news.com (8,192 FP8 FLOPs per CU per clock, five petaflops FP8); Hot Chips 2025 (2.4 / 2.2
  GHz, 1,400 / 1,000 W, 7 Infinity Fabric links); tomshardware.com (8 TB/s; FP4/FP6 20.1 / 18.45 PF with sparsity).
- B300 / GB300: verda.com/blog/gb300-nvl72-architecture per-GPU table without sparsity.
- GB200: glennklockwood.com/garden/processors/B200, GB200 variant at 1,200 W.
- GH200: NVIDIA GH200 datasheet as transcribed in atineoSE/coding-model-seeks-gpu gh200_specs.md.
- Jetson AGX Thor: developer.ridgerun.com T5000 SoM overview (2,070 FP4 / 1,035 FP8 sparse, 1.575 GHz, 273 GB/s).
- Apple M5: Apple's announcement as reported by fonearena.com (10-core GPU, 153 GB/s).
- Ryzen AI Max+ 395: svethardware.cz (40 CUs at 2,900 MHz, 256-bit LPDDR5X-8000 = 256 GB/s, 16 Zen 5 cores).
- TPU v6e: docs.cloud.google.com/tpu/docs/v6e. Tesla P40: sysrqmts.com / omegaco.ae (30 SMs, 1,531 MHz, 47 INT8
  TOPS); Tesla P100: hothardware.com (21.2 / 10.6 / 5.3 TF); GTX 1080 Ti: ua.gecid.com (28 SMs, 1,582 MHz).
"""

from __future__ import annotations

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.hardware.resolve import resolve_device

T = 1e12


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(include_user=False)


@pytest.mark.parametrize("device_id, memory_gib, bandwidth_gb_s, peaks_tflops", [
    # AMD: dense = half the sparse FP4/FP6 headline (20.1 PF MI355X, 18.45 PF MI350X); FP8 "five petaflops"
    ("mi355x", 288, 8000, {"fp4": 10066.3, "fp8": 5033.2, "bf16": 2516.6}),
    ("mi350x", 288, 8000, {"fp4": 9227.5, "fp8": 4613.7, "bf16": 2306.9}),
    # Blackwell Ultra: FP4 up, INT8 and FP64 cut (Verda per-GPU table without sparsity; glennklockwood FP64)
    ("b300", 270, 7700, {"fp4": 14000, "fp8": 4500, "bf16": 2250, "int8": 150, "fp64": 1.25}),
    ("gb300", 279, 8000, {"fp4": 15000, "fp8": 5000, "bf16": 2500, "int8": 165}),
    ("gb200", 186, 8000, {"fp4": 10000, "fp8": 5000, "bf16": 2500, "int8": 5000, "fp64": 45}),
    # GH200 datasheet, non-sparse column; 96 GB HBM3 at 4 TB/s or 144 GB HBM3e at 4.9 TB/s
    ("gh200", 96, 4000, {"fp8": 1979, "bf16": 990, "tf32": 494}),
    ("gh200-144gb", 144, 4900, {"fp8": 1979, "bf16": 990}),
    # Jetson T5000: 2,070 FP4 / 1,035 FP8 TFLOPS are sparse; 128 GB LPDDR5X at 273 GB/s
    ("jetson-agx-thor", 128, 273, {"fp4": 1035, "fp8": 517.5}),
    # Google's v6e docs: 918 TFLOPs bf16, 1,836 TOPs int8, 32 GB at 1,638 GBps
    ("tpu-v6e", 32, 1638, {"bf16": 918, "int8": 1836}),
    # Tesla P40: 47 INT8 TOPS (DP4A), 24 GB GDDR5 at 347.1 GB/s
    ("tesla-p40", 24, 347.1, {"int8": 47}),
])
def test_datasheet_figures(catalog, device_id, memory_gib, bandwidth_gb_s, peaks_tflops):
    d = catalog.device(device_id)
    assert d.memory_bytes == memory_gib * 2**30
    assert d.memory_bandwidth_bytes_per_s == pytest.approx(bandwidth_gb_s * 1e9)
    for precision, value in peaks_tflops.items():
        assert d.peak_flops_per_s[precision] == pytest.approx(value * T), precision
        assert f"tensor.{precision}" not in d.derived_peaks  # published, never replaced


def test_cdna4_per_cu_rate_reproduces_amd_figures(catalog):
    """256 CUs x 2,400 MHz x 8,192 FP8 FLOPs per CU per clock = 5,033 TF (ISSCC 2026: "five petaflops")."""
    d = catalog.device("mi355x")
    assert d.architecture == "cdna4"
    assert 256 * 2400e6 * 8192 == pytest.approx(d.peak_flops_per_s["fp8"], rel=1e-4)
    assert d.interconnect.kind == "infinity-fabric" and d.interconnect.bytes_per_s == pytest.approx(7 * 153.6e9)


def test_rack_scale_parts_reach_their_rack_totals(catalog):
    """GB300 NVL72: 72 GPUs x 15 PF = 1,080 PF dense FP4, 72 x 8 TB/s = 576 TB/s (rack figures, glennklockwood)."""
    d = catalog.device("gb300")
    assert 72 * d.peak_flops_per_s["fp4"] == pytest.approx(1080e15)
    assert 72 * d.memory_bandwidth_bytes_per_s == pytest.approx(576e12)
    assert catalog.device("gb200").interconnect.kind == "nvlink5"


def test_thor_bf16_is_derived_from_its_published_fp8(catalog):
    d = catalog.device("jetson-agx-thor")
    assert d.peak_flops_per_s["bf16"] == pytest.approx(517.5e12 / 2)
    assert "derived" in d.derived_peaks["tensor.bf16"] and "blackwell-thor" in d.derived_peaks["tensor.bf16"]


def test_apple_m5_peak_is_derived_and_marked(catalog):
    d = catalog.device("apple-m5")
    assert d.memory_bandwidth_bytes_per_s == pytest.approx(153e9)
    assert d.compute_units == 10
    # no Apple clock: the architecture's typical clock, and the wider range that goes with it
    assert "typical apple-m5 clock" in d.derived_peaks["tensor.fp16"]
    assert d.peak_flops_per_s["fp16"] == pytest.approx(10 * 1470e6 * 1024)


@pytest.mark.parametrize("device_id, cores, memory_gib, bandwidth_gb_s", [
    ("apple-m5-pro", 20, 64, 307), ("apple-m5-max", 40, 128, 614),  # Apple, 4 Mar 2026 (lowyat.net report)
])
def test_apple_m5_pro_and_max(catalog, device_id, cores, memory_gib, bandwidth_gb_s):
    d = catalog.device(device_id)
    assert (d.compute_units, d.memory_bytes, d.memory_bandwidth_bytes_per_s) == (
        cores, memory_gib * 2**30, pytest.approx(bandwidth_gb_s * 1e9))
    assert d.architecture == "apple-m5" and "derived" in d.derived_peaks["tensor.fp16"]


def test_strix_halo_gpu_and_cpu(catalog):
    gpu, cpu = catalog.device("ryzen-ai-max-395"), catalog.device("ryzen-ai-max-395-cpu")
    assert gpu.memory_bandwidth_bytes_per_s == pytest.approx(256e9)  # 256-bit x 8,000 MT/s / 8
    assert gpu.peak_flops_per_s["fp16"] == pytest.approx(40 * 2900e6 * 512)  # derived, rdna3 WMMA rate
    assert "derived" in gpu.derived_peaks["tensor.fp16"]
    assert gpu.host_cpu == cpu.id and cpu.kind == "cpu" and cpu.compute_units == 16


def test_pascal_rates_reproduce_nvidia_figures(catalog):
    """No tensor cores: P100 FP16 21.2 TF on the CUDA cores (2x FP32); GP102 FP16 at 1/64 and DP4A int8 at 4x FP32
    (P40: 30 SM x 1,531 MHz x 1,024 = 47.0 TOPS, NVIDIA 47); GTX 1080 Ti derived: 28 SM x 1,582 MHz x 256 FP32."""
    p100, p40, ti = catalog.device("p100 sxm2"), catalog.device("p40"), catalog.device("1080 ti")
    assert p100.vector_flops_per_s["fp16"] == pytest.approx(21.2e12) and "fp16" not in p100.peak_flops_per_s
    assert 30 * 1531e6 * 1024 == pytest.approx(p40.peak_flops_per_s["int8"], rel=0.01)
    assert p40.vector_flops_per_s["fp16"] < p40.vector_flops_per_s["fp32"] / 60
    assert ti.vector_flops_per_s["fp32"] == pytest.approx(28 * 1582e6 * 256)
    assert "derived" in ti.derived_peaks["vector.fp32"]


@pytest.mark.parametrize("name, expected", [
    ("MI355X", "mi355x"), ("AMD Instinct MI355X", "mi355x"), ("mi350x", "mi350x"),
    ("B300", "b300"), ("HGX B300", "b300"), ("GB200", "gb200"), ("GB200 NVL72", "gb200"), ("gb300", "gb300"),
    ("GH200", "gh200"), ("GH200 144GB HBM3e", "gh200-144gb"),
    ("Jetson AGX Thor", "jetson-agx-thor"), ("jetson thor", "jetson-agx-thor"), ("T5000", "jetson-agx-thor"),
    ("M5", "apple-m5"), ("Apple M5", "apple-m5"), ("M5 Pro", "apple-m5-pro"), ("M5 Max", "apple-m5-max"),
    ("ryzen ai max+ 395", "ryzen-ai-max-395"), ("Strix Halo", "ryzen-ai-max-395"),
    ("AMD Ryzen AI Max+ 395 w/ Radeon 8060S", "ryzen-ai-max-395"), ("Radeon 8060S", "ryzen-ai-max-395"),
    ("ryzen ai max+ 395 cpu", "ryzen-ai-max-395-cpu"),
    ("TPU v6e", "tpu-v6e"), ("Trillium", "tpu-v6e"), ("Tesla P40", "tesla-p40"), ("P100", "tesla-p100-pcie-16gb"),
    ("GTX 1080 Ti", "gtx-1080-ti"), ("1080ti", "gtx-1080-ti"), ("Tesla P100-PCIE-16GB", "tesla-p100-pcie-16gb"),
    ("P100 SXM2", "tesla-p100-sxm2-16gb"), ("B300-SXM-270GB", "b300"), ("GH200-144GB_aarch64", "gh200-144gb"),
])
def test_names_users_type_resolve(catalog, name, expected):
    assert resolve_device(catalog, name).id == expected


def test_new_devices_carry_no_unsourced_offer(catalog):
    new = {"mi355x", "mi350x", "b300", "gb200", "gb300", "gh200", "gh200-144gb", "jetson-agx-thor", "apple-m5",
           "ryzen-ai-max-395", "ryzen-ai-max-395-cpu", "tpu-v6e", "tesla-p40", "tesla-p100-sxm2-16gb",
           "tesla-p100-pcie-16gb", "gtx-1080-ti",
           "apple-m5-pro", "apple-m5-max"}
    assert not [o.id for o in catalog.offers.values() if o.gpu in new]
