"""price/streaming.py: a matrix product's time beyond max(weight read, compute) near its ridge point."""

import pytest

from sizeup.price import streaming


def test_the_excess_is_the_p_norm_less_the_max():
    p = streaming.overlap_exponent()[0].typical
    assert streaming.excess(1.0, 1.0, "typical") == pytest.approx(2 ** (1 / p) - 1)
    assert streaming.excess(2.0, 1.0, "typical") == pytest.approx((2 ** p + 1) ** (1 / p) - 2)
    assert streaming.excess(1.0, 2.0, "typical") == streaming.excess(2.0, 1.0, "typical")  # symmetric


def test_far_from_the_ridge_the_excess_vanishes():
    for r in (1e-3, 1e3):
        assert streaming.excess(1.0, r, "typical") < 0.003 * max(1.0, r)
    assert streaming.excess(0.0, 5.0, "typical") == 0.0
    assert streaming.excess(5.0, 0.0, "high") == 0.0


def test_the_exponent_is_sourced_and_the_fast_corner_overlaps_most():
    p, source = streaming.overlap_exponent()
    assert 1 <= p.low <= p.typical <= p.high
    assert "vidur" in source
    assert streaming.excess(1.0, 1.0, "low") < streaming.excess(1.0, 1.0, "typical") < streaming.excess(1.0, 1.0, "high")
    assert "price/streaming.py" in streaming.note()
