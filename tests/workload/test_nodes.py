"""Inference across nodes (workload/nodes.py): the node size from the device's board or --gpus-per-node, the
tensor-parallel collectives of a group across nodes in two levels (price/comm.py group_collective_time), a pipeline's
sends between stages on different nodes over the network; a group inside one node priced exactly as before."""

import pytest

from sizeup.engines import resolve
from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.ledger import Ledger
from tests.workload.ledgers import all_reduce_ledger
from sizeup import api
from sizeup.price.comm import collective_time, device_link, group_collective_time, network_link, send_time
from sizeup.workload.inference import tensor_parallel_comm
from sizeup.workload.nodes import Nodes, board_gpus, node_layout, stage_crossings
from sizeup.workload.pipeline import hop_time

CATALOG = load_catalog(include_user=False)
H100 = CATALOG.device("h100-sxm-80gb")


def _ledger(nbytes: int, layers: int = 61) -> Ledger:
    return all_reduce_ledger(nbytes, layers)


def test_board_size_of_nvlink_switch_and_mesh_devices_and_none_for_pcie_cards():
    assert board_gpus(H100) == 8
    assert board_gpus(CATALOG.device("mi300x")) == 8
    assert board_gpus(CATALOG.device("gb200")) == 72
    assert board_gpus(CATALOG.device("l40s")) is None  # PCIe card: one node unless --gpus-per-node


def test_layout_only_where_the_gpus_span_nodes():
    assert node_layout(H100, 8) == (None, None)
    nodes, note = node_layout(H100, 16)
    assert nodes == Nodes(per_node=8, network_gbit_per_s=3200.0)  # 400 Gb/s per GPU
    assert "2 nodes of 8" in note and "400 Gb/s per GPU assumed" in note
    assert node_layout(H100, 16, 4, 800.0)[0] == Nodes(per_node=4, network_gbit_per_s=800.0)
    assert "2 nodes of 8" in node_layout(H100, 12)[1]  # the last node part full
    with pytest.raises(ConfigError, match="positive"):
        node_layout(H100, 16, 0)


def test_sixteen_gpus_over_two_nodes_pay_more_per_collective_than_one_nvlink_domain():
    nodes, _ = node_layout(H100, 16)
    hidden = 7168 * 2  # one decode token's hidden states, bf16
    across, _, _ = tensor_parallel_comm(_ledger(hidden), H100, 16, None, None, nodes)
    one_domain, _, _ = tensor_parallel_comm(_ledger(hidden), H100, 16, None)
    eight, _, _ = tensor_parallel_comm(_ledger(hidden), H100, 8, None)
    inter = network_link(400e9 / 8)
    assert across.typical == pytest.approx(
        122 * group_collective_time("all_reduce", hidden, 16, 8, device_link(H100), inter).typical)
    assert across.typical > one_domain.typical and across.typical > eight.typical
    # the extra is at least the network's latency on every collective
    assert across.typical - one_domain.typical > 122 * inter.latency_s.typical * 0.5


def test_an_engines_own_all_reduce_stays_inside_one_node():
    vllm = resolve("vllm", H100)
    nodes, _ = node_layout(H100, 16)
    comm, _, _ = tensor_parallel_comm(_ledger(16384), H100, 16, vllm, None, nodes)
    ring = group_collective_time("all_reduce", 16384, 16, 8, device_link(H100), network_link(50e9))
    assert comm.typical == pytest.approx(122 * ring.typical)


def test_a_group_inside_one_node_is_priced_as_before():
    nodes, _ = node_layout(H100, 16)
    with_nodes, _, _ = tensor_parallel_comm(_ledger(16384), H100, 8, None, None, nodes)
    assert with_nodes.typical == pytest.approx(122 * collective_time("all_reduce", 16384, 8, device_link(H100)).typical)


def test_pipeline_sends_between_nodes_go_over_the_network():
    assert stage_crossings(2, 8, 8) == 1 and stage_crossings(4, 4, 8) == 1 and stage_crossings(4, 2, 8) == 0
    nodes, _ = node_layout(H100, 16)
    size = 64 * 8192 * 2 * 2
    hops, _ = hop_time(H100, 2, 64, 8192, 2, nodes, 8)
    assert hops.typical == pytest.approx(send_time(size, network_link(50e9)).typical)
    inside, _ = hop_time(H100, 2, 64, 8192, 2, None, 8)
    assert inside.typical == pytest.approx(send_time(size, device_link(H100)).typical)
    assert hops.typical > inside.typical


def test_estimate_sixteen_gpus_decode_slower_than_one_domain_and_eight_gpus_untouched():
    def run(**kw):
        return api.estimate("llama-3.1-70b", api.EstimateOptions(device="h100-sxm-80gb", engine="vllm", quant="bf16",
                                                                 prompt=128, output=128, **kw))

    two, one = run(gpus=16), run(gpus=16, gpus_per_node=16)
    assert two.decode.latency_s.typical > one.decode.latency_s.typical
    assert any("2 nodes of 8" in a for a in two.assumptions)
    eight, eight_flags = run(gpus=8), run(gpus=8, gpus_per_node=8, network_gbps=100)
    assert eight.decode.latency_s == eight_flags.decode.latency_s
    assert not any("nodes of" in a for a in eight.assumptions)
