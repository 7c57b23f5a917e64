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


def test_the_tiles_are_sourced_and_ordered():
    for unit in ("tensor", "vector"):
        tile, source = conv_tile_outputs(unit)
        assert 0 < tile.low <= tile.typical <= tile.high and "retrieved" not in source and "read 2026" in source
    assert conv_tile_outputs("tensor")[0].typical > conv_tile_outputs("vector")[0].typical
