"""Collectives: ring volumes on one link, and the two-level form for groups that span nodes."""

import pytest

from sizeup.price.comm import Link, collective_time, group_collective_time
from sizeup.ranges import Range

EXACT = Range(1.0, 1.0, 1.0)
NVLINK = Link(kind="nvlink", bytes_per_s=450e9, latency_s=Range(0.0, 0.0, 0.0), efficiency=EXACT)
NIC = Link(kind="network", bytes_per_s=50e9, latency_s=Range(0.0, 0.0, 0.0), efficiency=EXACT)
S = 20e9


def test_ring_volumes():
    assert collective_time("all_reduce", S, 8, NVLINK).typical == pytest.approx(2 * 7 / 8 * S / 450e9)
    assert collective_time("all_gather", S, 8, NVLINK).typical == pytest.approx(7 / 8 * S / 450e9)
    assert collective_time("all_reduce", S, 1, NVLINK).typical == 0.0


def test_a_group_inside_one_node_uses_nvlink_only():
    assert group_collective_time("all_reduce", S, 8, 8, NVLINK, NIC) == collective_time("all_reduce", S, 8, NVLINK)


def test_a_group_across_nodes_shares_the_nodes_nics():
    """32 ranks, 4 per node: reduce-scatter and all-gather over NVLink inside each node, and an
    all-reduce of S/4 per rank between the 8 nodes, each rank on its own NIC."""
    two_level = group_collective_time("all_reduce", S, 32, 4, NVLINK, NIC).typical
    expected = 2 * (3 / 4) * S / 450e9 + 2 * (7 / 8) * (S / 4) / 50e9
    assert two_level == pytest.approx(expected)
    assert two_level < collective_time("all_reduce", S, 32, NIC).typical / 3
    assert group_collective_time("all_reduce", S, 32, 1, NVLINK, NIC) == collective_time("all_reduce", S, 32, NIC)


def test_all_to_all_sends_only_the_other_nodes_share_over_the_nic():
    t = group_collective_time("all_to_all", S, 64, 8, NVLINK, NIC).typical
    assert t == pytest.approx(S * 56 / 64 / 50e9 + S * 7 / 64 / 450e9)
