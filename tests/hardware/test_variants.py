"""Issue 28.5 / 30.3 / 33.5: new devices, memory-size and power-mode variants, names users type for them."""

from __future__ import annotations

import pytest

from sizeup.errors import CatalogError, ResolveError
from sizeup.hardware.catalog import load_catalog
from sizeup.hardware.resolve import resolve_device
from sizeup.units import GIB

NEW_DEVICES = ["h200-nvl-141gb", "rtx-2000e-ada", "arc-pro-b60", "xeon-6787p", "mi250x-gcd",
               "jetson-orin-nano-8gb-original", "jetson-orin-nano-4gb-super", "jetson-orin-nx-16gb-super",
               "jetson-orin-nx-8gb-super"]

TYPED = {
    "orin nano 15w": "jetson-orin-nano-8gb-15w", "jetson orin nano 15w": "jetson-orin-nano-8gb-15w",
    "orin nano 25w": "jetson-orin-nano-8gb-25w", "orin nano 7w": "jetson-orin-nano-8gb-original-7w",
    "orin nano original": "jetson-orin-nano-8gb-original", "orin nano super": "jetson-orin-nano-8gb",
    "agx orin maxn": "jetson-agx-orin-64gb", "agx orin 15w": "jetson-agx-orin-64gb-15w",
    "agx orin 50w": "jetson-agx-orin-64gb-50w", "orin nx 16gb 25w": "jetson-orin-nx-16gb-25w",
    "orin nx super 40w": "jetson-orin-nx-16gb-super-40w", "xavier nx 15w": "jetson-xavier-nx-15w-6core",
    "agx xavier maxn": "jetson-agx-xavier-32gb", "agx xavier 30w": "jetson-agx-xavier-32gb-30w-all",
    "M2 16GB": "apple-m2-16gb", "M2 8GB": "apple-m2-8gb", "M3 Max 64GB": "apple-m3-max-64gb",
    "M3 Max 48GB": "apple-m3-max-48gb", "M4 24GB": "apple-m4-24gb", "M4 Pro 48GB": "apple-m4-pro-48gb",
    "M3 Pro 18GB": "apple-m3-pro-18gb", "M1 Ultra 64GB": "apple-m1-ultra-64gb",
    "M3 Ultra 256GB": "apple-m3-ultra-256gb", "M4 Max 128GB": "apple-m4-max", "M3 Max CPU 64GB": "apple-m3-max-cpu-64gb",
    "H200 NVL": "h200-nvl-141gb", "Arc Pro B60": "arc-pro-b60", "Xeon 6787P": "xeon-6787p",
    "MI250X GCD": "mi250x-gcd", "RTX 2000E Ada": "rtx-2000e-ada",
    "Ryzen 7 7840U": "ryzen-7-7840u", "8845HS": "ryzen-7-8845hs", "Ryzen AI 9 HX 370": "ryzen-ai-9-hx-370",
    "Core Ultra 7 155H": "core-ultra-7-155h", "Ultra 7 165H": "core-ultra-7-165h", "Core Ultra 9 185H": "core-ultra-9-185h",
    "Core Ultra 9 285H": "core-ultra-9-285h", "Snapdragon X Elite": "snapdragon-x-elite",
}

LAPTOP_CPUS = ["ryzen-7-7840u", "ryzen-7-8845hs", "ryzen-ai-9-hx-370", "core-ultra-7-155h", "core-ultra-7-165h",
               "core-ultra-9-185h", "core-ultra-9-285h", "snapdragon-x-elite"]


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(include_user=False)


@pytest.mark.parametrize("device_id", NEW_DEVICES)
def test_new_device_loads_with_memory_bandwidth_peaks_and_source(catalog, device_id):
    d = catalog.devices[device_id]
    assert d.memory_bytes > 0 and d.memory_bandwidth_bytes_per_s > 0 and d.architecture
    assert d.peak_flops_per_s.get("bf16", 0) > 0 or d.peak_flops_per_s.get("fp16", 0) > 0
    assert d.source and d.retrieved


@pytest.mark.parametrize("device_id", LAPTOP_CPUS)
def test_laptop_cpu_has_the_bandwidth_of_its_memory_config(catalog, device_id):
    d = catalog.devices[device_id]
    assert d.kind == "cpu" and 89e9 < d.memory_bandwidth_bytes_per_s < 140e9 and d.compute_units and d.source


def test_strix_point_compute_is_derived_per_core_type(catalog):
    d = catalog.devices["ryzen-ai-9-hx-370"]  # 4 Zen 5 x 5.15 GHz + 8 Zen 5c x 3.3 GHz, 32 FP32 FLOPs per clock
    assert d.vector_flops_per_s["fp32"] == pytest.approx((4 * 5.15e9 + 8 * 3.3e9) * 32)


@pytest.mark.parametrize("name,device_id", sorted(TYPED.items()))
def test_names_users_type_resolve_to_the_variant(catalog, name, device_id):
    assert resolve_device(catalog, name).id == device_id


def test_memory_variant_changes_memory_only(catalog):
    base, small = catalog.devices["apple-m3-max"], catalog.devices["apple-m3-max-64gb"]
    assert small.variant_of == "apple-m3-max" and small.memory_bytes == 64 * GIB
    assert small.memory_bandwidth_bytes_per_s == base.memory_bandwidth_bytes_per_s
    assert small.peak_flops_per_s == base.peak_flops_per_s


def test_power_modes_scale_peaks_and_bandwidth_as_the_nvpmodel_table(catalog):
    d = catalog.devices["jetson-orin-nano-8gb-15w"]  # 612 of 1,020 MHz on 8 of 8 SM; EMC 2,133 of 3,199 MHz
    assert d.memory_bandwidth_bytes_per_s == pytest.approx(102e9 * 2133 / 3199)
    assert d.peak_flops_per_s["int8"] == pytest.approx(33.5e12 * 612 / 1020)
    assert d.tdp_w == 15 and d.power_mode == "15W" and d.power_mode_clocks["gpu_units"] == 8
    agx = catalog.devices["jetson-agx-orin-64gb-15w"]  # 408 MHz on 6 of 16 SM; EMC 2,133 of 3,199
    base = catalog.devices["jetson-agx-orin-64gb"]
    assert agx.peak_flops_per_s["int8"] == pytest.approx(base.peak_flops_per_s["int8"] * 6 * 408 / (16 * 1300))
    assert agx.memory_bandwidth_bytes_per_s == pytest.approx(base.memory_bandwidth_bytes_per_s * 2133 / 3199)


def test_every_power_mode_variant_scales_by_its_clocks(catalog):
    modes = [d for d in catalog.devices.values() if d.variant_of and d.power_mode]
    assert len(modes) >= 30
    for d in modes:
        base = catalog.devices[d.variant_of]
        c, b = d.power_mode_clocks, base.power_mode_clocks
        compute = c["gpu_units"] * c["gpu_max_hz"] / (b["gpu_units"] * b["gpu_max_hz"])
        assert d.memory_bandwidth_bytes_per_s == pytest.approx(
            base.memory_bandwidth_bytes_per_s * c["emc_max_hz"] / b["emc_max_hz"]), d.id
        for precision, peak in base.peak_flops_per_s.items():
            assert d.peak_flops_per_s[precision] == pytest.approx(peak * compute), (d.id, precision)


@pytest.mark.parametrize("name,expected", [
    ("M3 Max 256GB", "apple-m3-max comes as"), ("orin nano 9w", "jetson-orin-nano-8gb comes as"),
    ("agx orin 20w", "jetson-agx-orin-64gb-15w (15W)")])
def test_unknown_variant_names_the_sizes_and_modes_there_are(catalog, name, expected):
    with pytest.raises(ResolveError) as err:
        resolve_device(catalog, name)
    assert f"unknown device {name!r}" in str(err.value) and expected in str(err.value) and "closest:" in str(err.value)


def _device_file(tmp_path, extra: str):
    (tmp_path / "x-soc.yaml").write_text(
        "id: x-soc\nname: X SoC\nvendor: v\nkind: soc\nmemory_gib: 16\nmemory_bandwidth_gb_per_s: 100\n"
        "dense_tflops: {fp16: 10}\nsource: s\nretrieved: 2026-01-01\n" + extra)
    return tmp_path


def test_variants_from_a_user_catalog(tmp_path):
    cat = load_catalog([str(_device_file(tmp_path, "memory_options: [8, 16]\n"))], include_user=False)
    assert cat.devices["x-soc-8gb"].memory_bytes == 8 * GIB and cat.devices["x-soc-8gb"].variant_of == "x-soc"


@pytest.mark.parametrize("extra,field", [
    ("memory_options: [8, -4]\n", "memory_options"),
    ("power_modes: {base: MAXN, source: s, retrieved: 2026-01-01, modes: "
     "[{name: 10W, gpu_max_mhz: 500, gpu_units: 4, cpu_online: 4, emc_max_mhz: 2000}]}\n", "power_modes"),
])
def test_bad_variant_data_names_the_file_and_field(tmp_path, extra, field):
    with pytest.raises(CatalogError) as err:
        load_catalog([str(_device_file(tmp_path, extra))], include_user=False)
    assert "x-soc.yaml" in str(err.value) and field in str(err.value)
