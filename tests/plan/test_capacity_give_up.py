"""plan/capacity.py `simulate(give_up=targets)`: a run stops early (None) only where the whole run's TTFT percentile
is over its target, and a run that ends gives the same result as without `give_up`."""

import pytest

from sizeup.plan import capacity
from sizeup.plan.capacity import ReplicaModel, rate_at_sla, simulate

MIXED = ReplicaModel(prefill_fixed_s=0.005, prefill_per_token_s=2e-5, decode_batches=(1, 8, 32, 128),
                     decode_step_s=(0.012, 0.013, 0.016, 0.03), max_batch=128, mixed_steps=True, chunked_prefill=True,
                     max_step_tokens=2048, front_s=0.01, request_s=0.002)
APART = ReplicaModel(prefill_fixed_s=0.005, prefill_per_token_s=2e-5, decode_batches=(1, 8, 32, 128),
                     decode_step_s=(0.012, 0.013, 0.016, 0.03), max_batch=64)


@pytest.mark.parametrize("model", [MIXED, APART])
@pytest.mark.parametrize("targets", [{"ttft_p95": 0.5}, {"ttft_p99": 0.3, "tpot_p95": 0.05}, {"ttft_p50": 0.2}])
def test_a_run_gives_up_only_where_it_misses(model, targets):
    stopped = 0
    for rate in (0.5, 2.0, 4.0, 6.0, 8.0, 12.0, 20.0):
        whole = simulate(model, rate, 800, 250, requests=1200)
        early = simulate(model, rate, 800, 250, requests=1200, give_up=targets)
        if early is None:
            stopped += 1
            ttft = {k: v for k, v in targets.items() if k.startswith("ttft")}
            assert any(whole.metric(k) > v for k, v in ttft.items())
        else:
            assert early.to_dict() == whole.to_dict()
    assert stopped  # the overloaded rates stop early


def test_rate_at_sla_is_the_same_as_with_every_run_to_its_end(monkeypatch):
    targets = {"ttft_p95": 0.3, "tpot_p95": 0.05}
    whole, calls = capacity.simulate, []

    def counted(*args, **kwargs):
        got = whole(*args, **kwargs)
        calls.append(got is None)
        return got

    monkeypatch.setattr(capacity, "simulate", counted)
    rate, result = rate_at_sla(MIXED, 800, 250, targets)
    assert any(calls)  # some runs of the bisection gave up
    monkeypatch.setattr(capacity, "simulate", lambda *args, give_up=None, **kwargs: whole(*args, **kwargs))
    again, every = rate_at_sla(MIXED, 800, 250, targets)
    assert rate > 0 and (rate, result.to_dict()) == (again, every.to_dict())
