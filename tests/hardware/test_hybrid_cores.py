"""Hybrid CPUs (P- and E-cores): the peak is the sum over core types, computed from the stated units."""

import pytest

from sizeup.errors import CatalogError
from sizeup.hardware.catalog import load_architectures, load_catalog

# Per-core FP32 FLOPs per clock, from the units as the architecture table's sources state them:
# Raptor Cove 2 x 256-bit FMA = 2 x 8 lanes x 2 FLOPs; Gracemont 2 x 128-bit FMA = 2 x 4 lanes x 2 FLOPs.
RAPTOR_COVE = 2 * (256 // 32) * 2
GRACEMONT = 2 * (128 // 32) * 2


@pytest.mark.parametrize("device_id, p_mhz, e_mhz", [("core-i9-13900k", 5500, 4300), ("core-i9-14900k", 5600, 4400)])
def test_hybrid_peak_is_the_sum_over_core_types(device_id, p_mhz, e_mhz):
    d = load_catalog(include_user=False).devices[device_id]
    expected = 8 * p_mhz * 1e6 * RAPTOR_COVE + 16 * e_mhz * 1e6 * GRACEMONT
    assert d.vector_flops_per_s["fp32"] == pytest.approx(expected, rel=1e-9)
    assert "vector.fp32" in d.derived_peaks and "sum over core types" in d.derived_peaks["vector.fp32"]
    table = load_architectures()
    assert d.derived_range == table.architecture_clock_range  # the wider range
    assert "fp16" not in d.vector_flops_per_s  # no native fp16 arithmetic on either core: never invented


def test_architecture_rates_match_the_stated_vector_widths():
    archs = load_architectures().architectures
    assert archs["raptor-cove"].vector["fp32"] == RAPTOR_COVE
    assert archs["gracemont"].vector["fp32"] == GRACEMONT


def test_a_core_type_naming_an_unknown_architecture_is_refused(tmp_path):
    devices = tmp_path / "devices"
    devices.mkdir()
    (devices / "hy.yaml").write_text(
        "id: hy\nname: Hybrid\nvendor: x\nkind: cpu\nmemory_gib: 8\nmemory_bandwidth_gb_per_s: 50\n"
        "core_types:\n- {name: P, architecture: nope, cores: 2, all_core_clock_mhz: 3000}\n"
        "source: test\nretrieved: 2026-12-03\n")
    with pytest.raises(CatalogError, match="architecture.*'nope'"):
        load_catalog([tmp_path], include_user=False)
