"""The wait of an eager collective for the latest rank (price/comm.py eager_rank_wait, comm.yaml eager_rank_wait):
+177 us at 8 NVIDIA ranks (TensorRT-LLM PR 12653: an NCCL collective at 310 us under eager launches against 133 us
in a CUDA graph), other group sizes by the expected maximum of n standard normal draws."""

from math import pi, sqrt

import pytest

from sizeup.price.comm import eager_rank_wait, expected_max_normal


def test_expected_maximum_of_normal_draws_matches_the_order_statistics_tables():
    assert expected_max_normal(1) == 0.0
    assert expected_max_normal(2) == pytest.approx(1 / sqrt(pi), abs=1e-4)  # exact: 1/sqrt(pi)
    assert expected_max_normal(4) == pytest.approx(1.0294, abs=1e-4)  # Harter (1961) tables
    assert expected_max_normal(8) == pytest.approx(1.4236, abs=1e-4)


def test_the_wait_is_the_measured_one_at_eight_ranks_and_scales_with_the_latest_of_n():
    eight = eager_rank_wait(8, "nvidia")
    assert (eight.low, eight.typical, eight.high) == pytest.approx((118e-6, 177e-6, 236e-6))
    two = eager_rank_wait(2, "nvidia")
    assert two.typical == pytest.approx(177e-6 * 0.5642 / 1.4236, rel=1e-3)
    assert eager_rank_wait(1, "nvidia").typical == 0.0


def test_no_figure_for_other_collective_libraries():
    assert eager_rank_wait(8, "amd") is None and eager_rank_wait(4, "intel") is None
