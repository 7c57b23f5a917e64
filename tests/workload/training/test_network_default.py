"""Training's node-to-node network where neither --network-gbps nor an offer states one: the same sourced per-GPU
figure inference across nodes reads (data/efficiency/comm.yaml nodes.network_gbit_per_gpu, workload/nodes.py), read
in one place; --network-gbps overrides it."""

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.price.comm import network_link
from sizeup.workload import nodes
from sizeup.workload.parallel import ParallelConfig
from sizeup.workload.training.config import TrainingConfig
from sizeup.workload.training.step_time import links

H100 = load_catalog(include_user=False).device("h100-sxm-80gb")
TWO_NODES = ParallelConfig(gpus=16, nodes=2)


def test_the_default_is_comm_yamls_figure_per_gpu(monkeypatch):
    _, inter = links(H100, TrainingConfig(parallel=TWO_NODES), None)
    assert inter.bytes_per_s == pytest.approx(nodes.network_gbit_per_gpu() * 1e9 / 8)
    board, domains, _ = nodes._nodes()
    monkeypatch.setattr(nodes, "_nodes", lambda: (board, domains, 200.0))  # the data file's figure changes
    _, inter = links(H100, TrainingConfig(parallel=TWO_NODES), None)
    assert inter.bytes_per_s == pytest.approx(network_link(200e9 / 8).bytes_per_s)
    assert nodes.node_layout(H100, 16)[0].network_bytes_per_s_per_gpu() == pytest.approx(inter.bytes_per_s)


def test_network_gbps_overrides_it_per_node():
    _, inter = links(H100, TrainingConfig(parallel=TWO_NODES, network_gbit_per_s=800.0), None)
    assert inter.bytes_per_s == pytest.approx(800e9 / 8 / 8)


def test_one_node_has_no_network():
    assert links(H100, TrainingConfig(parallel=ParallelConfig(gpus=8)), None)[1] is None
