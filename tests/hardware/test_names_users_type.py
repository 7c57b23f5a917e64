"""Names users type (issue 17's check): each resolves to a device with memory, bandwidth and a 16-bit peak."""

from __future__ import annotations

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.hardware.resolve import resolve_device

NAMES = [
    "RTX 3080", "4080", "RTX 4070 Ti", "3090 Ti", "RTX 2080 Ti", "RTX 5080", "laptop RTX 4090", "RTX 4090 Laptop GPU",
    "RTX 4000 Ada", "RTX 5000 Ada", "A4000", "RTX A5000", "A100 80GB PCIe", "NVIDIA A100 80GB PCIe", "H800", "A800",
    "L20", "NVIDIA GeForce RTX 4090", "rtx4090", "4060 Ti",
    "M1", "M1 Pro", "M1 Max", "M1 Max 32-core", "M1 Ultra", "M2", "M2 Pro", "M2 Max", "M2 Ultra",
    "M3", "M3 Pro", "M3 Max", "M3 Max 30-core", "Apple M3 Max", "M3 Ultra", "M4", "M4 Pro", "M4 Max",
    "RX 7900 XTX", "AMD Radeon RX 7900 XTX", "W7900", "MI210", "Arc A770", "Arc B580",
    "Jetson Orin NX", "Jetson Orin Nano", "EPYC 9654", "AMD EPYC 9654 96-Core Processor", "Graviton4",
    "Ryzen 9 7950X", "Core i9-13900K", "13th Gen Intel(R) Core(TM) i9-13900K", "i9-14900K",
    "M3 Max CPU", "M1 Max CPU", "M4 Pro CPU",
]


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(include_user=False)


@pytest.mark.parametrize("name", NAMES)
def test_name_resolves_with_memory_bandwidth_and_a_16_bit_peak(catalog, name):
    device = resolve_device(catalog, name)
    assert device.memory_bytes > 0
    assert device.memory_bandwidth_bytes_per_s > 0
    peaks = {**device.vector_flops_per_s, **device.peak_flops_per_s}
    # CPUs without a 16-bit matrix unit run 16-bit weights through the FP32 SIMD units (data/architectures.yaml)
    sixteen = ("fp16", "bf16", "fp32") if device.kind == "cpu" else ("fp16", "bf16")
    assert any(peaks.get(p, 0) > 0 for p in sixteen), f"{name} -> {device.id}: no 16-bit peak"


def test_catalog_is_three_times_wider(catalog):
    assert len(catalog.devices) >= 140


@pytest.mark.parametrize("name, expected", [
    ("MacBook Pro M3 Max", "apple-m3-max"), ('MacBook Pro 16" M3 Max', "apple-m3-max"),
    ("Mac Studio M2 Ultra", "apple-m2-ultra"), ("Mac mini M4 Pro", "apple-m4-pro"), ("MacBook Air M2", "apple-m2"),
    ("MacBook Pro 14-inch M3 Pro", "apple-m3-pro"), ("Mac Pro M2 Ultra", "apple-m2-ultra"),
    ("RX 6700 XT", "rx-6700-xt"), ("Radeon RX 6800 XT", "rx-6800-xt"),
])
def test_product_names_around_a_chip_resolve_to_the_chip(catalog, name, expected):
    """An Apple machine's name around its chip names the chip (the machine's 'Pro' is dropped, the chip's kept)."""
    assert resolve_device(catalog, name).id == expected
