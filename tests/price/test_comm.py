"""Collectives: ring volumes on one link, and the two-level form for groups that span nodes."""

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.price.comm import (
    Link,
    collective_time,
    device_link,
    group_collective_time,
    network_link,
    with_latency,
)
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


# --- ring latency on PCIe (data/efficiency/comm.yaml: base + hop per ring step, NCCL's tuning-model form) ----------

def test_a_hop_latency_grows_with_the_ring_steps():
    """NCCL's nsteps: 2(n-1) for an all-reduce, n-1 for an all-gather (src/graph/tuning.cc)."""
    pcie = Link(kind="pcie", bytes_per_s=32e9, latency_s=Range(4e-6, 4e-6, 4e-6), efficiency=EXACT,
                hop_latency_s=Range(3e-6, 3e-6, 3e-6))
    for n in (2, 4, 8):
        assert collective_time("all_reduce", 0.001, n, pcie).typical == pytest.approx(4e-6 + 2 * (n - 1) * 3e-6)
        assert collective_time("all_gather", 0.001, n, pcie).typical == pytest.approx(4e-6 + (n - 1) * 3e-6)
    assert with_latency(pcie, Range(8e-6, 8e-6, 8e-6)).hop_latency_s is None


def test_the_pcie_fit_reproduces_the_nccl_tests_points_it_was_fitted_on():
    """The typical base and hop of comm.yaml against the small-message all-reduces they were fitted on (sources in
    comm.yaml): 2x RTX 2080 Ti 12.25 us, 4x V100 behind one switch 20.3 us, 8x RTX 4090 42.1 us, 8x RTX 3090 54 us;
    every point inside the range."""
    link = device_link(load_catalog(include_user=False).device("a100-pcie-80gb"))
    assert link.kind == "pcie" and link.hop_latency_s is not None
    for n, measured in ((2, 12.25e-6), (4, 20.3e-6), (8, 42.1e-6), (8, 54e-6)):
        t = collective_time("all_reduce", 8, n, link)
        assert t.low <= measured <= t.high
        assert abs(t.typical - measured) / measured < 0.2


def test_nvlink_and_the_network_keep_a_fixed_latency():
    """Training's large NVLink / InfiniBand collectives do not change with the PCIe ring latency."""
    link = device_link(load_catalog(include_user=False).device("h100-sxm-80gb"))
    assert link.kind == "nvlink" and link.hop_latency_s is None
    assert collective_time("all_reduce", 8, 8, link).typical == pytest.approx(
        collective_time("all_reduce", 8, 2, link).typical, abs=1e-9)
    assert network_link(50e9).hop_latency_s is None


def test_an_amd_gpu_on_pcie_runs_rccls_latency():
    """ROCm's RCCL is slower per collective than NCCL (comm.yaml pcie_rccl: rccl issue #362, 25.8 us on 2 GPUs)."""
    catalog = load_catalog(include_user=False)
    amd, nvidia = device_link(catalog.device("rx-7900-xtx")), device_link(catalog.device("rtx-4090"))
    assert amd.kind == nvidia.kind == "pcie"
    assert collective_time("all_reduce", 16, 2, amd).typical == pytest.approx(25.8e-6, rel=0.02)
    assert collective_time("all_reduce", 16, 2, amd).typical > 2 * collective_time("all_reduce", 16, 2, nvidia).typical


# --- AMD Instinct xGMI: a fully connected mesh, one link per peer (comm.yaml xgmi) ---------------------------------

def test_mi300x_links_are_a_mesh_of_seven_64_gb_per_s_links():
    """AMD: each MI300X is joined to each of its 7 peers by its own xGMI link, 64 GB/s each way (rocm.blogs.amd.com
    mi300x-rccl-xgmi); the catalog's 896 GB/s is the 7 links, both directions."""
    from sizeup.price.comm import for_group

    link = device_link(load_catalog(include_user=False).device("mi300x"))
    assert link.kind == "xgmi" and link.peer_bytes_per_s == pytest.approx(64e9)
    assert [for_group(link, n).bytes_per_s for n in (2, 4, 8)] == pytest.approx([64e9, 192e9, 448e9])


def test_a_mesh_all_reduce_over_two_gpus_runs_on_one_link():
    """A large all-reduce over 2 MI300X moves 1/2 of the message over one 64 GB/s link; over 8 GPUs 7/4 of it over
    seven: the 8-GPU one is faster although it moves more, unlike a switch where the 2-GPU one is. 2 GiB: past the
    sizes RCCL was timed at, the ring formula on the plateau's efficiency."""
    link = device_link(load_catalog(include_user=False).device("mi300x"))
    two, eight = (collective_time("all_reduce", 1 << 31, n, link).typical for n in (2, 8))
    assert eight < two
    bus = 2 * 7 / 8 * (1 << 31) / (eight - link.latency_s.typical)  # busbw as rccl-tests reports it
    assert bus == pytest.approx(448e9 * link.efficiency.typical)  # ~314 GB/s: the 8x MI300X plateau read


def test_a_mid_size_all_reduce_over_eight_mi300x_takes_the_time_rccl_was_measured_at():
    """rccl-tests on 8 MI300X (comm.yaml xgmi.all_reduce_measured, in place): 2 MiB 35.8 us, 8 MiB 87.9 us, where the
    plateau's efficiency would give ~25 and ~61 us; between two sizes timed, log-log; 4 ranks: no series, the formula;
    an engine's own one-pass all-reduce (with_latency) is not RCCL's, so not its series either."""
    link = device_link(load_catalog(include_user=False).device("mi300x"))
    assert collective_time("all_reduce", 2 << 20, 8, link).typical == pytest.approx(35.80e-6)
    assert collective_time("all_reduce", 8 << 20, 8, link).typical == pytest.approx(87.87e-6)
    three = collective_time("all_reduce", 3 << 20, 8, link)
    assert 35.80e-6 < three.typical < 54.34e-6 and three.low <= three.typical <= three.high
    ring = 13.7e-6 + 2 * 7 / 8 * (2 << 20) / (448e9 * 0.7)
    assert collective_time("all_reduce", 2 << 20, 8, with_latency(link, link.latency_s)).typical == pytest.approx(ring)
    four = 13.7e-6 + 2 * 3 / 4 * (2 << 20) / (192e9 * 0.7)
    assert collective_time("all_reduce", 2 << 20, 4, link).typical == pytest.approx(four)
    mi355x = device_link(load_catalog(include_user=False).device("mi355x"))
    assert mi355x.measured is None  # twice the link rate, no series read for it


def test_an_nvidia_switch_link_is_not_a_mesh():
    link = device_link(load_catalog(include_user=False).device("h100-sxm-80gb"))
    assert link.kind == "nvlink" and link.peer_bytes_per_s is None


# --- NVLink bridges: PCIe cards joined in pairs (or fours), not through a switch (comm.yaml bridges) ----------------

def test_a_group_larger_than_the_bridge_runs_on_pcie():
    """H100 NVL: a pair joined by NVLink bridges (product brief PB-11773); H200 NVL: 2- or 4-way bridges. A group
    past the bridge rings over PCIe between the bridged sets."""
    from sizeup.price.comm import for_group

    catalog = load_catalog(include_user=False)
    nvl = device_link(catalog.device("h100-nvl-94gb"))
    assert for_group(nvl, 2).kind == "nvlink" and for_group(nvl, 4).kind == "pcie"
    h200 = device_link(catalog.device("h200-nvl-141gb"))
    assert for_group(h200, 4).kind == "nvlink" and for_group(h200, 8).kind == "pcie"
    sxm = device_link(catalog.device("h100-sxm-80gb"))
    assert for_group(sxm, 8) == sxm  # NVSwitch: every group on NVLink
    assert collective_time("all_reduce", 64e6, 4, nvl).typical > 4 * collective_time("all_reduce", 64e6, 2, nvl).typical
