"""Derived peaks: the architecture table against every published figure in the catalog."""

import datetime as dt
from pathlib import Path

import pytest

from sizeup.errors import CatalogError
from sizeup.hardware.architectures import derivable_peaks
from sizeup.hardware.catalog import load_architectures, load_catalog

TOLERANCE = 0.10  # issue 17: derived within 10% of published


def _published(device, key):
    if key == "fp16_acc16":
        return device.fp16_acc16_flops_per_s
    table, _, precision = key.partition(".")
    return (device.peak_flops_per_s if table == "tensor" else device.vector_flops_per_s).get(precision)


def _pairs():
    catalog, table = load_catalog(include_user=False), load_architectures()
    for d in catalog.devices.values():
        if d.architecture is None:
            continue
        peaks, basis = derivable_peaks(d, table.architectures[d.architecture])
        if basis != "device":  # an implied clock reproduces the figure it came from: not a check
            continue
        for key, (value, _method) in peaks.items():
            if key not in d.derived_peaks and _published(d, key):
                yield d.id, key, _published(d, key), value


def test_derived_peaks_within_ten_percent_of_published():
    pairs = list(_pairs())
    assert len(pairs) >= 100  # the check covers the catalog, not a handful
    off = [(i, k, p, v) for i, k, p, v in pairs if abs(v / p - 1) > TOLERANCE]
    assert not off, off


def test_a_device_without_a_published_peak_gets_a_derived_one():
    d = load_catalog(include_user=False).device("rtx-3080-ti")
    # GA102 SM: 512 dense FP16 FMA/clock with FP16 accumulate, half with FP32 accumulate on GeForce
    assert d.peak_flops_per_s["fp16"] == pytest.approx(80 * 1670e6 * 512)
    assert d.fp16_acc16_flops_per_s == pytest.approx(80 * 1670e6 * 1024)
    assert "derived" in d.derived_peaks["tensor.fp16"] and "ampere-ga10x" in d.derived_peaks["tensor.fp16"]
    assert d.to_dict()["derived_peaks"]["tensor.fp16"].startswith("derived:")
    assert d.derived_range[0] < 1 < d.derived_range[1]


def test_published_peaks_are_never_replaced():
    d = load_catalog(include_user=False).device("h100-sxm-80gb")
    assert d.peak_flops_per_s["bf16"] == pytest.approx(989.4e12)
    assert "tensor.bf16" not in d.derived_peaks


def test_apple_gpu_without_a_clock_uses_the_architecture_clock_and_a_wider_range(tmp_path):
    table = load_architectures()
    _device_file(tmp_path, arch="apple-m3", compute_units=40)
    d = load_catalog([tmp_path], include_user=False).device("test-gpu")
    assert d.vector_flops_per_s["fp32"] == pytest.approx(40 * 1398e6 * 256)
    assert "typical apple-m3 clock" in d.derived_peaks["vector.fp32"]
    assert d.derived_range == table.architecture_clock_range
    assert table.architecture_clock_range[0] < table.device_clock_range[0]


def test_every_architecture_row_is_sourced():
    for arch in load_architectures().architectures.values():
        assert arch.source and dt.date.fromisoformat(arch.retrieved) >= dt.date(2026, 12, 3)


def _device_file(folder: Path, arch: str = "ada", **extra) -> None:
    lines = ["id: test-gpu", "name: Test GPU", "vendor: nvidia", "kind: gpu", "memory_gib: 8",
             "memory_bandwidth_gb_per_s: 100", f"architecture: {arch}", "source: test", "retrieved: 2026-12-03"]
    lines += [f"{k}: {v}" for k, v in extra.items()]
    (folder / "test-gpu.yaml").write_text("\n".join(lines) + "\n")


def test_unknown_architecture_names_the_file_and_the_known_ids(tmp_path):
    _device_file(tmp_path, arch="kepler")
    with pytest.raises(CatalogError) as e:
        load_catalog([tmp_path], include_user=False)
    assert "test-gpu.yaml" in str(e.value) and "'kepler'" in str(e.value) and "ampere-ga10x" in str(e.value)


def test_consumer_marker_and_override(tmp_path):
    _device_file(tmp_path, compute_units=10, boost_clock_mhz=1000, fp32_accumulate="half")
    d = load_catalog([tmp_path], include_user=False).device("test-gpu")
    assert d.peak_flops_per_s["fp16"] == pytest.approx(10 * 1e9 * 512)  # Ada 1,024 halved
    assert d.peak_flops_per_s["int8"] == pytest.approx(10 * 1e9 * 2048)  # integer rates are not halved


def test_tensor_rate_scale_for_a_limited_part(tmp_path):
    _device_file(tmp_path, compute_units=92, boost_clock_mhz=2520, tensor_rate_scale=0.5)
    d = load_catalog([tmp_path], include_user=False).device("test-gpu")
    # NVIDIA L20: 92 SMs at 2,520 MHz, 119.5 TF FP16 and 239 INT8 dense: half the Ada per-SM rate
    assert d.peak_flops_per_s["fp16"] == pytest.approx(119.5e12, rel=0.01)
    assert d.peak_flops_per_s["int8"] == pytest.approx(239e12, rel=0.01)
    assert d.vector_flops_per_s["fp32"] == pytest.approx(92 * 2520e6 * 256)  # the vector rate is not limited


def test_missing_tensor_peak_scales_from_a_published_one(tmp_path):
    _device_file(tmp_path, compute_units=142, **{"vector_tflops": "{fp32: 90.5}", "dense_tflops": "{fp16: 181.05}"})
    d = load_catalog([tmp_path], include_user=False).device("test-gpu")
    # NVIDIA L40 publishes 362 INT8 TOPS: the FP16 figure x Ada's INT8/FP16 rate ratio (2), whatever the clock
    assert d.peak_flops_per_s["int8"] == pytest.approx(362.1e12)
    assert "published tensor fp16" in d.derived_peaks["tensor.int8"]


def test_a_clock_implied_by_a_published_peak_derives_the_other_unit():
    d = load_catalog(include_user=False).device("xeon-8480-2s")
    # AMX BF16 229.4 TF = 112 cores x 2.0 GHz x 1,024: AVX-512 FP32 at that clock, 64 FLOPs per core per clock
    assert d.vector_flops_per_s["fp32"] == pytest.approx(112 * 2.0e9 * 64, rel=1e-3)
    assert "implies" in d.derived_peaks["vector.fp32"]


def test_fp64_is_not_scaled_on_a_part_that_publishes_an_fp64_figure(tmp_path):
    _device_file(tmp_path, arch="hopper", compute_units=78,
                 **{"vector_tflops": "{fp32: 44, fp64: 1}", "dense_tflops": "{bf16: 148}"})
    d = load_catalog([tmp_path], include_user=False).device("test-gpu")
    assert "fp64" not in d.peak_flops_per_s  # H20-like: fp64 cut to 1 TF; no tensor fp64 guessed
    assert d.peak_flops_per_s["fp8"] == pytest.approx(296e12)
