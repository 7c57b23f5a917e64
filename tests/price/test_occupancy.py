"""Wave quantization of a convolution's output tiles over the SMs (price.occupancy)."""

import numpy as np
import pytest

from sizeup.price.occupancy import conv_tile_outputs, wave_fraction


def test_a_partial_wave_leaves_sms_idle():
    # 80 SMs (V100): 40 tiles fill half the chip, 80 all of it, 81 need a second wave of 1 tile
    busy = wave_fraction(np.array([40 * 64.0, 80 * 64.0, 81 * 64.0, 0.0]), 80, 64)
    assert busy.tolist() == pytest.approx([0.5, 1.0, 81 / 160, 1.0])


def test_many_tiles_fill_the_chip():
    # ResNet-50 layer4 at batch 256: 256*7*7*2048 outputs in 6144-element tiles over 80 SMs
    assert wave_fraction(np.array([256 * 49 * 2048.0]), 80, 6144)[0] > 0.98


def test_batch_1_late_stage_fills_a_fraction():
    # layer4 3x3 conv at batch 1: 7*7*512 = 25088 outputs -> 5 tiles of 6144 on 80 SMs
    assert wave_fraction(np.array([49 * 512.0]), 80, 6144)[0] == pytest.approx(5 / 80)


def test_the_tiles_are_sourced_ordered_and_set_only_where_measured():
    for unit in ("tensor", "vector"):
        tile, source = conv_tile_outputs("volta", unit)
        assert 0 < tile.low <= tile.typical <= tile.high and "read 2026" in source
    assert conv_tile_outputs("volta", "tensor")[0].typical > conv_tile_outputs("volta", "vector")[0].typical
    # TensorRT 10 on Ada fills its SMs at batch 1 (overheads.yaml): no tile, the law is off there
    assert conv_tile_outputs("ada", "tensor") is None and conv_tile_outputs(None, "tensor") is None


def test_an_architecture_without_a_tile_is_priced_as_before():
    from sizeup.hardware.catalog import load_catalog
    from sizeup.ledger import Ledger, OpKind, OpRecord
    from sizeup.price import roofline

    conv = OpRecord(op="aten.convolution", kind=OpKind.CONV, scope="c", flops=2 * 49 * 512 * 4608,
                    matmul_flops=2 * 49 * 512 * 4608, bytes_read=4608 * 512 * 2, bytes_written=49 * 512 * 2,
                    dtype="fp16")
    catalog = load_catalog(include_user=False)
    ledger = Ledger(name="one conv", ops=[conv])
    v100, l4 = catalog.device("v100-sxm2-16gb"), catalog.device("l4")
    slow = roofline.price(ledger, v100).total_s.typical
    kinds, roofline.OCCUPANCY_KINDS = roofline.OCCUPANCY_KINDS, frozenset()
    try:
        v100_full, l4_full = roofline.price(ledger, v100).total_s.typical, roofline.price(ledger, l4).total_s.typical
    finally:
        roofline.OCCUPANCY_KINDS = kinds
    assert slow > 5 * v100_full  # 5 tiles of 6144 outputs on 80 SMs
    assert roofline.price(ledger, l4).total_s.typical == l4_full
