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


def _linear(rows, n, k, dtype="fp16"):
    from sizeup.ledger import OpKind, OpRecord

    return OpRecord(op="linear", kind=OpKind.MATMUL, scope="fc", flops=2 * rows * n * k, matmul_flops=2 * rows * n * k,
                    bytes_read=(rows * k + k * n + n) * 2, bytes_written=rows * n * 2, dtype=dtype)


def _a100():
    from sizeup.hardware.catalog import load_catalog

    return load_catalog(include_user=False).device("a100-sxm-40gb")  # 108 SMs


def test_the_matmul_tiles_are_sourced_and_grow_with_the_rows():
    from sizeup.price.occupancy import matmul_tile_outputs, split_k_min

    small, source = matmul_tile_outputs("ampere-ga100", rows=128)
    large, _ = matmul_tile_outputs("ampere-ga100", rows=512)
    assert small.typical == 64 * 128 and large.typical == 128 * 128 and "read 2026-12-04" in source
    assert 0 < split_k_min("ampere-ga100")[0].low <= split_k_min("ampere-ga100")[0].high
    assert matmul_tile_outputs("ada") is None and matmul_tile_outputs("volta") is None  # unsourced: law off


def test_the_gemm_shape_is_recovered_from_the_bytes():
    from sizeup.price.occupancy import _gemm_shape

    outputs, rows, k = _gemm_shape(_linear(128, 768, 768))
    assert outputs == 128 * 768 and k == 768 and rows == pytest.approx(128, abs=0.5)  # the bias costs < 0.5 row


def test_a_small_gemm_fills_part_of_the_chip_after_splitting_k():
    from sizeup.ledger import Ledger
    from sizeup.price.occupancy import matmul_busy
    from sizeup.engines.runtimes import get_runtime

    # BERT-base at batch 1, 128 tokens: q (K=768) has 12 tiles of 64x128 on 108 SMs, K split in 3 slices of 256;
    # the FFN down projection (K=3072) splits 9 ways and fills the chip; decode (1 row) is a GEMV: left out
    ops = [_linear(128, 768, 768), _linear(128, 768, 3072), _linear(1, 4096, 4096), _linear(512, 4096, 4096)]
    busy, _ = matmul_busy(Ledger(name="bert", ops=ops), _a100(), get_runtime("tensorrt"))
    assert busy[1].tolist() == pytest.approx([36 / 108, 1.0, 1.0, 1.0])
    assert (busy[0] >= busy[1]).all() and (busy[1] >= busy[2]).all()
    # LLM prefill at 512 tokens: 128 tiles of 128x128 >= 108 SMs, its partial wave left to the matmul efficiency


def test_the_matmul_law_needs_a_runtime_and_a_sourced_tile():
    from sizeup.hardware.catalog import load_catalog
    from sizeup.ledger import Ledger
    from sizeup.price.occupancy import matmul_busy
    from sizeup.engines.runtimes import get_runtime

    ledger = Ledger(name="q", ops=[_linear(128, 768, 768)])
    assert matmul_busy(ledger, _a100(), None) == (None, None)  # engine-level pricing keeps its kernel fractions
    l4 = load_catalog(include_user=False).device("l4")
    assert matmul_busy(ledger, l4, get_runtime("tensorrt")) == (None, None)
    fp32 = Ledger(name="q32", ops=[_linear(128, 768, 768, "fp32")])
    assert matmul_busy(fp32, _a100(), get_runtime("tensorrt")) == (None, None)
