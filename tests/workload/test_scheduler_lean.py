"""workload/scheduler_lean.py, the loop `scheduler.run` takes without a KV pool, against the general loop
(`scheduler._run_pool` with `kv_tokens` None): on random runs, open and closed loops, every batching option, a
`stop` that ends runs early, both return the same Trace to the bit."""

from __future__ import annotations

import random

import pytest

from sizeup.workload import scheduler


def _case(seed: int) -> dict:
    rng = random.Random(seed)
    n = rng.choice([1, 2, 5, 30, 200])
    requests = [(rng.choice([0, 1, 2, rng.randint(1, 3000)]), rng.choice([1, 2, rng.randint(1, 400)]))
                for _ in range(n)]
    a, b, c = rng.uniform(1e-3, 0.05), rng.uniform(1e-5, 1e-3), rng.uniform(1e-6, 1e-4)
    limit = rng.choice([1, 2, 7, 64, 256])
    table = [a + b * k + rng.uniform(0, 1e-4) for k in range(limit + 1)]
    rate = rng.choice([0.5, 5.0, 50.0, 500.0])
    arrivals = None
    if rng.random() < 0.6:
        arrivals = sorted(rng.expovariate(rate) * k for k in range(n))
    return dict(requests=requests, limit=limit, budget=rng.choice([None, 1, 16, 512, 2048, 8192]),
                mixes=rng.random() < 0.6, step=lambda batch, chunk: table[batch] + c * chunk + a * (chunk > 1000),
                decode=table.__getitem__, arrivals=arrivals,
                window=rng.choice([None, 1, 3, 16, n + 5]), beams=rng.choice([1, 1, 2]),
                chunked=rng.random() < 0.7, per_schedule=rng.choice([1, 1, 4, 8]),
                front=rng.choice([0.0, 0.0, 1e-3, 0.05]), target=rng.choice([None, 0.05, 0.5, 5.0]))


def _stop(target: float | None, sent: list[float]):
    if target is None:
        return None
    over = [0]

    def stop(k: int, now: float) -> bool:
        if now - sent[k] > target:
            over[0] += 1
        return over[0] > 3

    return stop


@pytest.mark.parametrize("seed", range(300))
def test_the_lean_loop_takes_the_general_loops_decisions(seed):
    case = _case(seed)
    target = case.pop("target")
    sent = case["arrivals"] or [0.0] * len(case["requests"])
    lean = scheduler.run(**case, stop=_stop(target, sent))
    general = scheduler._run_pool(**case, stop=_stop(target, sent), kv_tokens=None, watermark=0.0,
                                  output_reserve=None)
    assert lean == general
    assert lean.order == general.order and lean.first == general.first and lean.done == general.done


@pytest.mark.parametrize("seed", range(120))
def test_runs_of_alike_requests_keep_the_general_loops_order(seed):
    # every request alike (the planner's runs): the lean loop keeps the running requests in a queue, not a heap, since
    # they finish in the order their prompts did; the same Trace as the general loop's heap, to the bit
    case = _case(seed)
    target = case.pop("target")
    rng = random.Random(1000 + seed)
    n = rng.choice([2, 30, 200, 1200])
    case["requests"] = [(rng.choice([1, 2, rng.randint(1, 3000)]), rng.choice([1, 2, rng.randint(2, 400)]))] * n
    if case["arrivals"] is not None:
        rate = rng.choice([0.5, 5.0, 50.0, 500.0])
        case["arrivals"] = sorted(rng.expovariate(rate) * k for k in range(n))
    sent = case["arrivals"] or [0.0] * n
    lean = scheduler.run(**case, stop=_stop(target, sent))
    general = scheduler._run_pool(**case, stop=_stop(target, sent), kv_tokens=None, watermark=0.0,
                                  output_reserve=None)
    assert lean == general
    assert lean.order == general.order and lean.first == general.first and lean.done == general.done
