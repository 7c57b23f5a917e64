"""NPUs added for issue 28's out-of-sample rows (Huawei Ascend 910B, Tenstorrent Wormhole and Blackhole): the
datasheet figures each file cites, the peaks derived where a vendor publishes none (marked, with a widened range),
and the names users type.

Sources (each device file carries the full citation):
- Wormhole n150 / n300: docs.tenstorrent.com/aibs/wormhole/specifications.html (72 / 128 Tensix at 1 GHz, 12 / 24 GB
  GDDR6 at 288 / 576 GB/s, FP16 74 / 131 TF, FP8 262 / 466 TF, 160 / 300 W).
- Blackhole p150a: tenstorrent.github.io core/aibs/blackhole/specifications.md (120 Tensix, up to 1.35 GHz, 32 GB,
  512 GB/s, 664 TF BLOCKFP8 only, 300 W); p300c: core/aibs/blackhole/p300.md (240 Tensix, 64 GB, 1024 GB/s, 600 W,
  clock TBD).
- Ascend 910B2 / B3 / B4: a public Ascend modelling table of vendor figures (cube FP16 353.8 / 294.9 / 245.7 TF, INT8
  twice that, vector FP16 22 / 18.4 / 15.4 TF, 64 / 64 / 32 GB at 1.6 / 1.6 / 0.8 TB/s).
"""

from __future__ import annotations

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.hardware.resolve import resolve_device

T = 1e12


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(include_user=False)


@pytest.mark.parametrize("device_id, memory_gib, bandwidth_gb_s, tdp_w, peaks_tflops, vector_tflops", [
    ("tenstorrent-n150", 12, 288, 160, {"fp16": 74, "fp8": 262}, {}),
    ("tenstorrent-n300", 24, 576, 300, {"fp16": 131, "fp8": 466}, {}),
    ("tenstorrent-p150a", 32, 512, 300, {}, {}),
    ("tenstorrent-p300", 64, 1024, 600, {}, {}),
    ("ascend-910b2", 64, 1600, None, {"fp16": 353.8, "int8": 707.9}, {"fp16": 22}),
    ("ascend-910b3", 64, 1600, None, {"fp16": 294.9, "int8": 589.8}, {"fp16": 18.4}),
    ("ascend-910b4", 32, 800, None, {"fp16": 245.7, "int8": 491.5}, {"fp16": 15.4}),
])
def test_datasheet_figures(catalog, device_id, memory_gib, bandwidth_gb_s, tdp_w, peaks_tflops, vector_tflops):
    d = catalog.device(device_id)
    assert d.kind == "npu"
    assert d.memory_bytes == memory_gib * 2**30
    assert d.memory_bandwidth_bytes_per_s == pytest.approx(bandwidth_gb_s * 1e9)
    assert d.tdp_w == tdp_w
    for precision, value in peaks_tflops.items():
        assert d.peak_flops_per_s[precision] == pytest.approx(value * T), precision
        assert f"tensor.{precision}" not in d.derived_peaks  # published, never replaced
    for precision, value in vector_tflops.items():
        assert d.vector_flops_per_s[precision] == pytest.approx(value * T), precision
        assert f"vector.{precision}" not in d.derived_peaks


@pytest.mark.parametrize("device_id, key, tflops, wide", [
    # SFPU: 32 FP32 lanes, one FMA per cycle = 64 FLOPs per Tensix per clock
    ("tenstorrent-n150", "vector.fp32", 72 * 1.0 * 64 / 1e3, False),
    ("tenstorrent-n300", "vector.fp32", 128 * 1.0 * 64 / 1e3, False),
    # Wormhole bf16: the published FP16 figure at the Matrix Unit's same rate for both 16-bit formats
    ("tenstorrent-n150", "tensor.bf16", 74, False),
    # Blackhole matrix unit: 2,048 BF16 FLOPs per Tensix per clock (664 TF BLOCKFP8 / 2 on 120 Tensix at 1.35 GHz)
    ("tenstorrent-p150a", "tensor.bf16", 120 * 1.35 * 2048 / 1e3, False),
    ("tenstorrent-p150a", "vector.fp32", 120 * 1.35 * 64 / 1e3, False),
    # p300c: clock TBD, so the architecture's typical clock and its wider range
    ("tenstorrent-p300", "tensor.bf16", 240 * 1.35 * 2048 / 1e3, True),
    # Ascend: bf16 at the published fp16 cube rate; fp32 vector half the published fp16 vector rate (assumed)
    ("ascend-910b2", "tensor.bf16", 353.8, False),
    ("ascend-910b2", "vector.fp32", 11.0, False),
    ("ascend-910b4", "vector.fp32", 7.7, False),
])
def test_unpublished_peaks_are_derived_and_marked(catalog, device_id, key, tflops, wide):
    d = catalog.device(device_id)
    unit, _, precision = key.partition(".")
    peaks = d.peak_flops_per_s if unit == "tensor" else d.vector_flops_per_s
    assert peaks[precision] == pytest.approx(tflops * T, rel=1e-3)
    assert d.derived_peaks[key].startswith("derived:")
    low, high = d.derived_range
    assert (low, high) == ((0.75, 1.15) if wide else (0.85, 1.05))


def test_blackhole_rate_reproduces_the_published_block_fp8_figure():
    """The tensix-blackhole row's 2,048 BF16 FLOPs per Tensix per clock is half the block-FP8 rate Tenstorrent's
    664 TF implies on 120 Tensix at 1.35 GHz (and 140 x 1.3 GHz x 2,048 = Hot Chips' 372 TF FP16)."""
    assert 120 * 1.35e9 * 4096 == pytest.approx(664e12, rel=0.001)
    assert 140 * 1.3e9 * 2048 == pytest.approx(372e12, rel=0.002)


@pytest.mark.parametrize("name, device_id", [
    ("n150", "tenstorrent-n150"), ("wormhole n300", "tenstorrent-n300"), ("p150a", "tenstorrent-p150a"),
    ("p150b", "tenstorrent-p150a"), ("p300c", "tenstorrent-p300"), ("Ascend910B3", "ascend-910b3"),
    ("910b4", "ascend-910b4"),
])
def test_names_users_type(catalog, name, device_id):
    assert resolve_device(catalog, name).id == device_id
