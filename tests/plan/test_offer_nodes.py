"""`estimate --offer`: the offer's GPUs per instance are the node and its stated network joins the instances
(plan/topology.py offer_nodes), so GPUs past one instance are priced across nodes (workload/nodes.py) as
`--gpus-per-node` / `--network-gbps` would price them; the flags, where given, decide."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sizeup import api
from sizeup.hardware.catalog import load_catalog
from sizeup.plan.topology import offer_nodes

CATALOG = load_catalog(include_user=False)


def _decode(**options) -> tuple[float, tuple[str, ...]]:
    e = api.estimate("llama-3.3-70b", device="h100-sxm-80gb", gpus=8, engine="vllm", quant="bf16", **options)
    return e.decode.latency_s.typical, e.assumptions


def test_eight_gpus_on_a_four_gpu_offer_span_two_of_its_instances():
    on_offer, notes = _decode(offer="lambda-gpu-4x-h100-sxm5")
    assert on_offer == _decode(gpus_per_node=4)[0]  # as the flag prices it, to the bit
    assert on_offer > _decode()[0] * 1.2  # before: one board of 8 on NVLink, the offer's instances ignored
    assert on_offer > _decode(offer="lambda-gpu-4x-h100-sxm5", gpus_per_node=8)[0]  # the flag decides
    assert any("its 4 GPUs per instance are a node" in n and "states no network" in n for n in notes)
    assert any("2 nodes of 4" in n for n in notes)


def test_the_offers_stated_network_joins_its_instances_unless_the_flag_says_otherwise():
    p5 = CATALOG.offers["aws-p5-48xlarge"]
    slow = replace(p5, network_bytes_per_s=1600e9 / 8)
    per_node, network, note = offer_nodes(slow, 16, None, None)
    assert (per_node, network) == (8, pytest.approx(1600.0))
    assert "its 8 GPUs per instance are a node" in note and "efa at 1,600 Gb/s per instance" in note
    assert offer_nodes(slow, 16, None, 800.0)[1] == 800.0
    assert offer_nodes(slow, 16, 4, 800.0) == (4, 800.0, "")
    assert offer_nodes(slow, 8, None, None)[2] == ""  # one instance holds them: nothing to say
