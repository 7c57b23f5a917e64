"""A mixture-of-experts layer's grouped GEMM (price/efficiency.py GROUPED): priced as a matmul unless an engine's MoE
kernel sets its own compute fraction and bandwidth share, in both the scalar (rates.price_totals) and the vectorised
(roofline.price) paths."""

from dataclasses import replace

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.ledger import Ledger, OpKind, OpRecord
from sizeup.price.efficiency import GROUPED, default_efficiency, tensor_fraction
from sizeup.price.rates import price_totals
from sizeup.price.roofline import price
from sizeup.ranges import Range

GIB = 2**30


def _ledger(flops: int) -> Ledger:
    """One dense projection and one experts' product of the same size (bf16, one execution each)."""
    ops = [OpRecord(op=name, kind=OpKind.MATMUL, scope=name, flops=flops, matmul_flops=flops, bytes_read=GIB,
                    bytes_written=0, dtype="bf16") for name in ("linear", "grouped_linear")]
    return Ledger(ops=ops)


@pytest.fixture(scope="module")
def h100():
    return load_catalog().device("h100-sxm-80gb")


def test_grouped_falls_back_to_the_matmul_fraction():
    eff = default_efficiency("gpu")
    assert tensor_fraction(eff, GROUPED, "bf16") == tensor_fraction(eff, "matmul", "bf16")
    own = replace(eff, tensor={**eff.tensor, GROUPED: Range(0.1, 0.2, 0.3)})
    assert tensor_fraction(own, GROUPED, "fp8") == Range(0.1, 0.2, 0.3)


def test_without_an_moe_kernel_both_ops_price_alike(h100):
    eff = default_efficiency("gpu")
    roof = price(_ledger(10**9), h100, eff)
    assert roof.time["typical"][0] == pytest.approx(roof.time["typical"][1])


def test_grouped_memory_share_prices_only_the_experts(h100):
    eff = default_efficiency("gpu")
    slow = replace(eff, grouped_memory=eff.memory.scale(0.5))
    ledger = _ledger(10**6)  # weight-bound: 1 GiB read for a MFLOP
    base, roof = price(ledger, h100, eff), price(ledger, h100, slow)
    assert roof.time["typical"][0] == pytest.approx(base.time["typical"][0])
    assert roof.time["typical"][1] == pytest.approx(2 * base.time["typical"][1], rel=1e-6)
    scalar = price_totals(ledger, h100, slow)
    assert scalar.total_s.typical == pytest.approx(float(roof.time["typical"].sum()), rel=1e-6)


def test_grouped_compute_fraction_prices_only_the_experts(h100):
    eff = default_efficiency("gpu")
    own = replace(eff, tensor={**eff.tensor, GROUPED: tensor_fraction(eff, "matmul", "bf16").scale(0.25)})
    ledger = _ledger(10**15)  # compute-bound
    base, roof = price(ledger, h100, eff), price(ledger, h100, own)
    assert roof.time["typical"][0] == pytest.approx(base.time["typical"][0])
    assert roof.time["typical"][1] == pytest.approx(4 * base.time["typical"][1], rel=1e-6)
    assert price_totals(ledger, h100, own).total_s.typical == pytest.approx(float(roof.time["typical"].sum()), rel=1e-6)


def test_grouped_memory_share_prices_the_expert_weights_not_the_token_rows(h100):
    """The MoE kernels' bandwidth shares were measured as expert-weight bytes over kernel time (weight-bound steps):
    an op that states its weight bytes streams those at the share and its tokens' rows at the device's memory
    efficiency, so a long prompt's activation traffic is not slowed by the weight-streaming share."""
    eff = default_efficiency("gpu")
    slow = replace(eff, grouped_memory=eff.memory.scale(0.25))
    rows = OpRecord(op="grouped_linear", kind=OpKind.MATMUL, scope="e", flops=10**6, matmul_flops=10**6,
                    bytes_read=GIB, bytes_written=GIB, weight_bytes=GIB // 4, dtype="bf16")
    base, roof = price(Ledger(ops=[rows]), h100, eff), price(Ledger(ops=[rows]), h100, slow)
    # 1/8 of the bytes are weights at 4x the time per byte, the other 7/8 as before: (7 + 4) / 8 of the plain time
    assert roof.time["typical"][0] == pytest.approx(base.time["typical"][0] * 11 / 8, rel=1e-6)
    assert price_totals(Ledger(ops=[rows]), h100, slow).total_s.typical == pytest.approx(
        float(roof.time["typical"][0]), rel=1e-6)


def test_weight_bytes_cannot_exceed_the_bytes_read():
    with pytest.raises(ValueError, match="weight_bytes"):
        OpRecord(op="grouped_linear", kind=OpKind.MATMUL, scope="e", bytes_read=10, weight_bytes=11)
