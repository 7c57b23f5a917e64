"""Apple CPU clusters as their own devices: linked from the SoC (host_cpu), priced with --gpu-layers 0."""

import pytest

from sizeup.api import estimate
from sizeup.hardware.catalog import load_catalog

P_CORE, E_CORE = 4 * (128 // 32) * 2, 2 * (128 // 32) * 2  # FP32 FLOPs/clock: 4 and 2 x 128-bit NEON FMA pipes


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(include_user=False)


def test_every_host_cpu_shares_the_socs_memory_and_reaches_at_most_its_bandwidth(catalog):
    linked = [d for d in catalog.devices.values() if d.vendor == "apple" and d.host_cpu]
    assert len(linked) >= 20
    for soc in linked:
        cpu = catalog.devices[soc.host_cpu]
        assert cpu.kind == "cpu" and cpu.memory_bytes == soc.memory_bytes
        assert cpu.memory_bandwidth_bytes_per_s <= soc.memory_bandwidth_bytes_per_s


def test_m1_max_cpu_bandwidth_is_the_measured_cluster_limit(catalog):
    # llama.cpp PR #1642 (philipturner): M1 Max CPU physical limit 204.8 GB/s of the SoC's 409.6 GB/s;
    # the catalog's SoC entry says 400 GB/s, so half is 200.
    cpu = catalog.devices["apple-m1-max-cpu"]
    assert cpu.memory_bandwidth_bytes_per_s == pytest.approx(0.5 * catalog.devices["apple-m1-max"].memory_bandwidth_bytes_per_s)


@pytest.mark.parametrize("device_id, p, e, p_mhz, e_mhz",
                         [("apple-m3-max-cpu", 12, 4, 4050, 2748), ("apple-m4-pro-cpu", 10, 4, 3852, 2592), ("apple-m1-cpu", 4, 4, 3200, 2064)])
def test_cpu_peak_is_cores_times_clock_times_neon_rate(catalog, device_id, p, e, p_mhz, e_mhz):
    cpu = catalog.devices[device_id]
    expected = p * p_mhz * 1e6 * P_CORE + e * e_mhz * 1e6 * E_CORE
    assert cpu.vector_flops_per_s["fp32"] == pytest.approx(expected, rel=1e-9)
    assert cpu.vector_flops_per_s["fp16"] == pytest.approx(2 * expected, rel=1e-9)
    assert "vector.fp32" in cpu.derived_peaks


def test_gpu_layers_0_on_an_m3_max_prices_on_its_cpu_entry():
    est = estimate("llama-3.1-8b", device="apple-m3-max", engine="llama.cpp", quant="q4_k_m", gpu_layers=0)
    text = " ".join(est.assumptions)
    assert "apple-m3-max-cpu" in text
    assert est.decode.tokens_per_s is not None and est.prefill.tokens_per_s is not None
    # memory-bound decode can be no faster than the CPU cluster's bandwidth over the weights read per token
    weights = 4.6e9  # q4_k_m Llama-3.1-8B, ~4.6 GB (the estimate's own weights figure is in CPU RAM)
    assert est.decode.tokens_per_s.high < 200e9 / weights * 1.2


def test_m2_ultra_cpu_check_row_is_priced_within_a_quarter():
    """Check row (nothing was tuned on it): justine.lol/matmul 'LLaMA Now Goes Faster on CPUs' (2024-03,
    mirrored in guevara/read-it-later issue #11711), Mac Studio 24-core M2 Ultra CPU, Mistral 7B q8_0,
    llama.cpp 2024-03-26: prompt 90 tok/s, eval 27 tok/s. Estimated on 2026-12-03: prefill 108 (75-165),
    decode 33.0 (22.0-41.2) tok/s. The row is one of the validation rows (inference_measurements_amd_cpu.yaml), whose
    calibrated ranges are judged over all rows (docs/ACCURACY.md); here the typical stays within 25%."""
    est = estimate("mistral-7b", device="apple-m2-ultra", engine="llama.cpp", quant="q8_0", gpu_layers=0)
    assert abs(est.prefill.tokens_per_s.typical / 90 - 1) <= 0.25
    assert abs(est.decode.tokens_per_s.typical / 27 - 1) <= 0.25
