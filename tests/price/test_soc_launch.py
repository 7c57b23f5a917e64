"""Per-kernel host time of system-on-chip devices by vendor (data/efficiency/soc.yaml by_vendor; price.efficiency)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sizeup.errors import CatalogError
from sizeup.hardware.catalog import load_catalog
from sizeup.price.efficiency import default_efficiency, device_efficiency, parse_efficiency

CATALOG = load_catalog(include_user=False)
ENTRY = {"low": 0.5, "typical": 0.6, "high": 0.7, "basis": "b", "source": "s", "retrieved": "d"}


@pytest.mark.parametrize("device_id", ["dgx-spark", "jetson-agx-orin-64gb", "jetson-agx-thor", "jetson-orin-nano-8gb"])
def test_nvidia_socs_launch_through_cuda_at_the_gpu_kinds_per_kernel_time(device_id):
    # soc.yaml overhead_s is PyTorch MPS on Apple silicon (~20 us typical); Jetson and DGX Spark run the CUDA driver
    eff = device_efficiency(CATALOG.devices[device_id])
    assert eff.overhead_s == default_efficiency("gpu").overhead_s
    assert eff.overhead_s.typical < default_efficiency("soc").overhead_s.typical
    assert "nvidia launch" in eff.origin
    assert eff.tensor == default_efficiency("soc").tensor  # the soc fractions otherwise


@pytest.mark.parametrize("device_id", ["apple-m3-pro", "apple-m2-ultra"])
def test_apple_socs_keep_the_kinds_per_kernel_time(device_id):
    assert device_efficiency(CATALOG.devices[device_id]).overhead_s == default_efficiency("soc").overhead_s


def test_amd_apus_launch_through_hip_or_vulkan_at_the_gpu_kinds_per_kernel_time():
    # Strix Halo (gfx1151) runs llama.cpp / Ollama through ROCm/HIP or Vulkan RADV, the discrete Radeon drivers
    # (ollama PR 14445, nix-amd-ai issue 61): soc.yaml by_vendor.amd takes gpu.yaml's 10 us, not Metal/MPS's 20 us;
    # a discrete RDNA3 card's measured HIP graph node (3.85 us; ROCm/rocm-systems#10834) lies inside that range
    eff = device_efficiency(CATALOG.devices["ryzen-ai-max-395"])
    assert eff.overhead_s == default_efficiency("gpu").overhead_s
    assert eff.overhead_s.low < 3.85e-6 < eff.overhead_s.high
    assert "amd launch" in eff.origin


def test_a_llama_cpp_decode_on_dgx_spark_is_priced_at_the_cuda_per_kernel_time():
    from sizeup.api import estimate

    # gemma-3-1b Q4_0 through Ollama on a GB10: 180.4 tok/s published (llmfit PR 1012, a CHECK row, not fitted);
    # at the MPS per-kernel time every small kernel was floored at 20 us and it priced 87 tok/s (-52%)
    result = estimate("gemma-3-1b", device="dgx-spark", engine="ollama", quant="q4_0", batch=1, prompt=64, output=300)
    assert 120 < result.decode.tokens_per_s.typical < 200


def test_a_malformed_vendor_entry_is_a_catalog_error(tmp_path: Path):
    base = {"kind": "soc", "tensor": {k: ENTRY for k in ("matmul", "conv", "attention")}, "vector": ENTRY,
            "memory": ENTRY, "overhead_s": {**ENTRY, "low": 1e-6, "typical": 1e-5, "high": 1e-4}}
    path = tmp_path / "soc.yaml"
    with pytest.raises(CatalogError, match="by_vendor.nvidia"):
        parse_efficiency({**base, "by_vendor": {"nvidia": {"tensor": {}}}}, path)
    with pytest.raises(CatalogError, match="needs 'source'"):
        parse_efficiency({**base, "by_vendor": {"nvidia": {"overhead_s_of": "gpu", "basis": "b", "retrieved": "d"}}}, path)
    own = parse_efficiency({**base, "by_vendor": {"acme": {"overhead_s": {**ENTRY, "low": 2e-6, "typical": 3e-6,
                                                                         "high": 4e-6}}}}, path)
    assert own.by_vendor["acme"].typical == 3e-6
