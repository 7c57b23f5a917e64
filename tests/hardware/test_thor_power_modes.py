"""Jetson AGX Thor (T5000) power modes as catalog variants: the nvpmodel table of Jetson Linux R38.4 (Platform Power
and Performance: Jetson Thor; read in a public transcription, data/devices/jetson-agx-thor.yaml power_modes)."""

import pytest

from sizeup.hardware.catalog import load_catalog

CATALOG = load_catalog(include_user=False)


@pytest.mark.parametrize("name,device_id", [
    ("thor 120w", "jetson-agx-thor-120w"), ("jetson agx thor 90w", "jetson-agx-thor-90w"),
    ("t5000 70w", "jetson-agx-thor-70w"), ("jetson thor maxn", "jetson-agx-thor")])
def test_thor_mode_names_resolve(name, device_id):
    assert CATALOG.device(name).id == device_id


def test_thor_modes_scale_compute_by_tpcs_and_clock_and_keep_the_memory():
    base = CATALOG.devices["jetson-agx-thor"]  # MAXN: 20 SM (10 TPC) at the module's 1,575 MHz, LPDDR5X 4,266 MHz
    mode_120 = CATALOG.devices["jetson-agx-thor-120w"]  # 10 TPC at 1,386 MHz, memory 4,266 MHz
    mode_90 = CATALOG.devices["jetson-agx-thor-90w"]  # 6 TPC / 3 FBP at 1,530 MHz, memory 4,266 MHz
    mode_70 = CATALOG.devices["jetson-agx-thor-70w"]  # as 90W on the GPU; 12 CPU cores at 1,998 MHz
    assert mode_120.peak_flops_per_s["fp8"] == pytest.approx(517.5e12 * 1386 / 1575)
    assert mode_90.peak_flops_per_s["fp4"] == pytest.approx(1035e12 * 12 * 1530 / (20 * 1575))
    assert mode_70.peak_flops_per_s == mode_90.peak_flops_per_s
    for mode in (mode_120, mode_90, mode_70):
        assert mode.memory_bandwidth_bytes_per_s == base.memory_bandwidth_bytes_per_s == 273e9
        assert mode.variant_of == "jetson-agx-thor"
    assert (mode_70.tdp_w, mode_70.power_mode_clocks["cpu_online"], mode_70.power_mode_clocks["cpu_max_hz"]) == \
        (70, 12, 1998e6)


def test_thor_mode_peaks_say_the_table_is_an_unverified_transcription():
    """The mode table was read in a transcription its author flags for checking (and its MAXN clock conflicts
    with the data sheet's): every derived peak of a mode says so, so an estimate's assumptions show it."""
    for mode in ("120w", "90w", "70w"):
        device = CATALOG.devices[f"jetson-agx-thor-{mode}"]
        assert device.derived_peaks
        for note in device.derived_peaks.values():
            assert "unverified transcription of NVIDIA's R38.4 power-mode table" in note
    assert all("unverified" not in note for note in CATALOG.devices["jetson-agx-thor"].derived_peaks.values())
