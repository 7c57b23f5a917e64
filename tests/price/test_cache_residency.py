"""L2 residency of activations the previous kernel wrote (price.cache_residency)."""

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.ledger import Ledger, OpKind, OpRecord
from sizeup.price import roofline
from sizeup.price.cache_residency import l2_to_dram, resident_reads, usable_fraction
from sizeup.engines.runtimes import get_runtime

MIB = 2**20


def _conv(name, act_in, weights, act_out, count=1):
    # a memory-bound conv: few FLOPs, reads its input activation and its weights, writes its output
    return OpRecord(op="aten.convolution", kind=OpKind.CONV, scope=name, flops=2 * act_out, matmul_flops=2 * act_out,
                    bytes_read=act_in + weights, bytes_written=act_out, dtype="fp16", count=count)


def _chain(act):
    """Three convs in a row, each reading the previous one's `act`-byte output plus 4 MiB of weights."""
    return Ledger(name="chain", ops=[_conv(f"c{i}", act, 4 * MIB, act) for i in range(3)])


def test_the_ratios_and_usable_share_are_sourced_and_at_least_dram_speed():
    for arch in ("ada", "ampere-ga100", "hopper"):
        ratio, source = l2_to_dram(arch)
        assert 1 < ratio.low <= ratio.typical <= ratio.high and "read 2026-12-04" in source
    # RTX 4090 copy: 3,254 GB/s from L2 against 819.6 GB/s from DRAM (cuda_microbenchmark analysis_RTX4090.md)
    assert l2_to_dram("ada")[0].low == pytest.approx(3254.37 / 819.61, rel=0.01)
    assert l2_to_dram("volta") is None and l2_to_dram(None) is None  # unsourced: every byte at DRAM speed
    assert 0 < usable_fraction()[0].typical < 1


def test_only_the_read_the_previous_op_wrote_is_served_and_only_when_it_fits():
    ledger = _chain(MIB)
    moved = [float(o.total_bytes) for o in ledger.ops]
    served, largest = resident_reads(ledger, moved, capacity=30 * MIB)
    assert served == [0.0, MIB, MIB]  # the first op's input came from the host; weights never count
    assert largest == 2 * MIB
    assert resident_reads(ledger, moved, capacity=1.5 * MIB)[0] == [0.0, 0.0, 0.0]  # 2 MiB live does not fit


def test_a_fused_op_is_skipped_and_the_kernel_before_it_is_the_producer():
    relu = OpRecord(op="aten.relu", kind=OpKind.ELEMENTWISE, scope="r", flops=MIB, bytes_read=MIB, bytes_written=MIB,
                    dtype="fp16")
    ledger = Ledger(name="fused", ops=[_conv("a", MIB, 4 * MIB, MIB), relu, _conv("b", MIB, 4 * MIB, MIB)])
    moved = [float(ledger.ops[0].total_bytes), 0.0, float(ledger.ops[2].total_bytes)]  # relu folded into conv a
    assert resident_reads(ledger, moved, capacity=30 * MIB)[0] == [0.0, 0.0, MIB]


def test_a_fused_engine_on_an_l4_reads_small_activations_from_l2_but_not_large_ones():
    l4 = load_catalog(include_user=False).device("l4")
    trt = get_runtime("tensorrt")
    small = roofline.price(_chain(2 * MIB), l4, runtime=trt)
    assert any("cache_residency" in n for n in small.notes)
    # DRAM time of the 2nd and 3rd op falls by the activation read's share (2 of the 8 MiB moved) x (1 - 1 / 4.21)
    dram = roofline.price(_chain(2 * MIB), l4)  # no runtime: engine-level pricing, the rule is off
    assert small.memory[1] / dram.memory[1] == pytest.approx(1 - (2 / 8) * (1 - 1 / 4.21), rel=1e-3)
    assert small.memory[0] == pytest.approx(dram.memory[0])
    big = roofline.price(_chain(40 * MIB), l4, runtime=trt)  # 80 MiB live > 0.64 x 48 MiB: streams from DRAM
    assert not any("cache_residency" in n for n in big.notes)


def test_devices_without_a_sourced_ratio_or_l2_size_are_priced_as_before():
    catalog = load_catalog(include_user=False)
    trt = get_runtime("tensorrt")
    for device in ("v100-sxm2-16gb", "jetson-agx-xavier-32gb"):  # volta: no ratio; Xavier: no l2_mib
        roof = roofline.price(_chain(MIB), catalog.device(device), runtime=trt)
        assert not any("cache_residency" in n for n in roof.notes)


def test_weights_that_fit_beside_the_working_set_stay_in_l2_too():
    from sizeup.ledger import TensorCategory, TensorRecord

    tiny = Ledger(name="tiny", ops=_chain(MIB).ops,
                  tensors=[TensorRecord(name=f"w{i}", category=TensorCategory.PARAMETER, nbytes=4 * MIB, first_use=0,
                                        last_use=2) for i in range(3)])
    l4 = load_catalog(include_user=False).device("l4")
    roof = roofline.price(tiny, l4, runtime=get_runtime("tensorrt"))
    off = roofline.price(tiny, l4)
    # 12 MiB of weights + 2 MiB live fit in 0.64 x 48 MiB: every byte at L2 speed
    assert roof.memory[0] == pytest.approx(off.memory[0] / 4.21, rel=1e-3)
