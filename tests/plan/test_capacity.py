"""Serving capacity: the replica arithmetic and the simulation against queueing theory."""

import pytest

from sizeup.plan.capacity import ReplicaModel, rate_at_sla, replicas_needed, simulate


def test_replica_arithmetic_of_the_reference_example():
    # a peak of 1,000,000 requests in one hour = 277.8 req/s; 230 req/s per replica at the SLA batch
    plan = replicas_needed(1_000_000 / 3600, 50.0, 230.0)
    assert plan.peak_requests_per_s == pytest.approx(277.78, abs=0.01)
    assert plan.for_load == 2 and plan.with_redundancy == 3
    assert "2 replicas for load, 3 with N+1" in plan.arithmetic


def test_headroom_adds_replicas_when_needed():
    assert replicas_needed(220.0, 50.0, 230.0, headroom=0.0).for_load == 1
    assert replicas_needed(220.0, 50.0, 230.0, headroom=0.2).for_load == 2  # 220 > 0.8 × 230


@pytest.mark.parametrize("rho", [0.3, 0.6, 0.8])
def test_md1_mean_wait_matches_the_closed_form(rho):
    """One server, deterministic service d, Poisson arrivals λ: W_q = ρ·d / (2(1 − ρ)) (Pollaczek–Khinchine)."""
    d = 0.01
    lam = rho / d
    model = ReplicaModel(prefill_fixed_s=d, prefill_per_token_s=0.0, decode_batches=(1,), decode_step_s=(d,),
                         max_batch=1)
    result = simulate(model, lam, 100, 1, requests=40_000, seed=3)
    expected = rho * d / (2 * (1 - rho))
    assert result.ttft["mean"] - d == pytest.approx(expected, rel=0.05)


def test_batching_raises_throughput_and_latency_with_load():
    model = ReplicaModel(prefill_fixed_s=0.005, prefill_per_token_s=2e-5, decode_batches=(1, 8, 32, 128),
                         decode_step_s=(0.012, 0.013, 0.016, 0.03), max_batch=128)
    light = simulate(model, 1.0, 800, 250, requests=800)
    heavy = simulate(model, 8.0, 800, 250, requests=800)
    assert heavy.mean_batch > light.mean_batch
    assert heavy.tpot["p50"] >= light.tpot["p50"]
    assert light.ttft["p50"] < light.e2e["p50"] and light.stable


def test_rate_at_sla_is_the_highest_rate_that_meets():
    model = ReplicaModel(prefill_fixed_s=0.005, prefill_per_token_s=2e-5, decode_batches=(1, 8, 32, 128),
                         decode_step_s=(0.012, 0.013, 0.016, 0.03), max_batch=128)
    targets = {"ttft_p95": 1.0, "tpot_p95": 0.02}
    rate, result = rate_at_sla(model, 800, 250, targets)
    assert rate > 0 and result.meets(targets)
    assert not simulate(model, rate * 1.3, 800, 250, requests=2000).meets(targets)
