"""Realisable topology (issue 30, point 1): the two sheets of the issue, re-run.

- "Serve a 7B chat model, end-to-end p99.9 < 500 ms" used to rent 12 × H100 as TP4 replicas split across
  2-GPU marketplace instances: now every replica lives inside one instance, and a multi-GPU replica's
  collectives are priced on the link the offer states (PCIe where it states none).
- "Pretrain 13B on 1T tokens on 64 H100" used to price 32 separate 2-GPU boxes as if on 400 Gb/s
  InfiniBand: now a job spans instances only on offers that state their network, priced on that network.
"""

from __future__ import annotations

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.hardware.schema import parse_offers
from sizeup.plan.recommend import plan_scenario
from sizeup.plan.scenario import parse_scenario
from sizeup.plan.topology import installed, link_text, place_job, replica_offers
from sizeup.price.comm import device_link

CATALOG = load_catalog(include_user=False)

CHAT_7B = {"name": "chat-7b-e2e", "model": "llama-2-7b", "task": "chat", "traffic": {"users": 100},
           "sla": {"e2e_p999_s": 0.5}, "constraints": {"devices": ["h100", "rtx-5090"]}}
PRETRAIN_13B = {"name": "pretrain-13b", "model": "llama-2-13b", "task": "pretrain",
                "job": {"tokens": 1_000_000_000_000, "seq": 4096, "deadline_hours": 720},
                "constraints": {"devices": ["h100"], "max_gpus": 64}}


@pytest.fixture(scope="module")
def chat():
    return plan_scenario(parse_scenario(CHAT_7B), CATALOG)


def test_no_serving_replica_spans_instances(chat):
    """Every option the search kept holds each replica inside one instance of its offer."""
    assert chat.ranked, "the 7B chat scenario has options"
    for c in chat.ranked:
        assert c.offer.gpu_count >= c.gpus, c.label
        per_instance = c.detail["fleet"]["per_instance"]
        assert per_instance == c.offer.gpu_count // c.gpus
        assert c.monthly.instances * per_instance >= c.replicas.with_redundancy


def test_tensor_parallel_replicas_are_priced_on_the_offers_link(chat):
    """A TP replica on an offer that states no GPU link is priced over PCIe, and its sheet says it is assumed."""
    for c in chat.ranked:
        if c.gpus > 1:
            link = device_link(c.device)
            if c.offer.interconnect is None:
                assert link.kind == "pcie" and "assumed" in c.detail["link"], c.label
            else:
                assert link.kind == "nvlink" and "stated" in c.detail["link"], c.label


def test_a_marketplace_box_without_a_stated_link_is_pcie():
    h100 = CATALOG.device("h100")
    box = CATALOG.offers["vastai-h100-sxm-80gb-x2"]
    assert box.interconnect is None and box.network_bytes_per_s is None
    assert device_link(installed(h100, box)).kind == "pcie"
    assert "assumed" in link_text(h100, box)
    p5 = CATALOG.offers["aws-p5-48xlarge"]
    assert device_link(installed(h100, p5)).kind == "nvlink"


def test_tp_group_never_split_across_instances():
    """replica_offers keeps only offers that hold the whole tensor-parallel group."""
    offers = CATALOG.offers_for("h100-sxm-80gb")
    assert all(o.gpu_count >= 4 for o in replica_offers(offers, 4))
    assert not any(o.id == "vastai-h100-sxm-80gb-x2" for o in replica_offers(offers, 4))


def test_tp_collectives_count_once_per_layer():
    """Two all-reduces per layer on the link: the latency of each counts (not one per step)."""
    from sizeup.ingest.hf_config import load_model
    from sizeup.workload.inference import InferenceConfig, estimate_inference

    arch = load_model("llama-2-7b")
    h100 = CATALOG.device("h100")
    pcie = installed(h100, CATALOG.offers["vastai-h100-sxm-80gb-x2"])
    one = estimate_inference(arch, h100, InferenceConfig(prompt=512, output=256, engine="vllm", gpus=1), limits=False)
    two = estimate_inference(arch, pcie, InferenceConfig(prompt=512, output=256, engine="vllm", gpus=2), limits=False)
    link = device_link(pcie)
    # 32 layers × 2 all-reduces, each at least the link's latency (data/efficiency/comm.yaml)
    assert two.decode.latency_s.typical >= one.decode.latency_s.typical / 2 + 64 * link.latency_s.typical * 0.99


@pytest.fixture(scope="module")
def pretrain():
    return plan_scenario(parse_scenario(PRETRAIN_13B), CATALOG)


def test_pretraining_spans_instances_only_on_a_stated_network(pretrain):
    chosen = pretrain.chosen
    assert chosen is not None and chosen.gpus >= 16
    instances = chosen.detail["instances"]
    assert instances * chosen.offer.gpu_count == chosen.gpus
    assert instances > 1 and chosen.offer.network_kind in ("efa", "infiniband")
    assert chosen.detail["layout"]["network_gbit_per_s"] == pytest.approx(chosen.offer.network_bytes_per_s * 8 / 1e9)
    for c in pretrain.ranked:  # no option is a pile of marketplace boxes
        if c.detail["instances"] > 1:
            assert c.offer.network_bytes_per_s is not None, c.label


def test_a_job_too_big_for_an_instance_without_a_network_is_refused_with_the_reason():
    h100 = CATALOG.device("h100")
    boxes = [CATALOG.offers["vastai-h100-sxm-80gb-x2"], CATALOG.offers["vastai-h100-sxm-80gb-x8"]]
    placement, why = place_job(h100, 64, boxes)
    assert placement is None
    assert "none states a network between instances" in why and "vastai-h100-sxm-80gb-x8" in why
    placement, _ = place_job(h100, 8, boxes)
    assert placement.instances == 1 and placement.offer.id == "vastai-h100-sxm-80gb-x8"


def test_offer_network_needs_its_kind_and_source():
    base = {"provider": "x", "currency": "USD", "offers": [{
        "id": "x-8", "instance": "x8", "gpu": "h100-sxm-80gb", "gpu_count": 8, "region": "us",
        "on_demand_per_hour": 10, "price_date": "2026-12-01", "source": "s", "retrieved": "2026-12-01",
        "network_gbit_per_s": 400}]}
    from sizeup.errors import CatalogError

    with pytest.raises(CatalogError, match="network_kind"):
        parse_offers(base, "x.yaml", {})
    base["offers"][0]["network_kind"] = "infiniband"
    with pytest.raises(CatalogError, match="link_source"):
        parse_offers(base, "x.yaml", {})
    base["offers"][0]["link_source"] = "the provider's page"
    (offer,) = parse_offers(base, "x.yaml", {})
    assert offer.network_kind == "infiniband" and offer.network_bytes_per_s == 50e9
