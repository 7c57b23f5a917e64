"""The front-end batcher (workload/front_batcher.py, --batcher-window): a harness that gathers Poisson arrivals for
up to W seconds or N requests before it sends them on."""

import math
import random

import pytest

from sizeup.errors import ConfigError
from sizeup.workload.front_batcher import companions, hold_wait
from sizeup.workload.serving import Load


def _simulated_wait(rate: float, window: float, most: int | None, n: int = 200_000) -> float:
    """Mean hold of n Poisson arrivals through the batcher, simulated event by event (seeded)."""
    rng = random.Random(7)
    t, opened, held, waits = 0.0, None, [], []
    for _ in range(n):
        t += rng.expovariate(rate)
        if opened is not None and t >= opened + window:  # the window timed out before this arrival
            waits += [opened + window - a for a in held]
            opened, held = None, []
        if opened is None:
            opened = t
        held.append(t)
        if most is not None and len(held) == most:  # full: sent at once
            waits += [t - a for a in held]
            opened, held = None, []
    return sum(waits) / len(waits)


@pytest.mark.parametrize("rate, window, most", [
    (73.5, 0.3, 96), (73.5, 0.3, 10), (2.0, 0.3, None), (500.0, 0.05, 8),
    # near rate x window = most - 1, where the window and the count both close windows often
    (3.33, 0.3, 2), (6.67, 0.3, 3), (30.0, 0.3, 10), (316.7, 0.3, 96), (10.0, 0.3, 4), (1.0, 0.3, 2)])
def test_the_mean_hold_matches_a_simulated_batcher(rate, window, most):
    # AMD's MLPerf v4.1 vLLM server harness: up to 0.3 s or 96 requests (tests/validation/rows_server_throughput.yaml)
    assert hold_wait(rate, window, most) == pytest.approx(_simulated_wait(rate, window, most), rel=0.01)


def test_a_timed_out_window_holds_a_request_about_half_of_it_and_a_count_capped_one_half_its_fill_time():
    assert hold_wait(73.5, 0.3, 96) == pytest.approx((0.3 + 73.5 * 0.3 * 0.15) / (1 + 73.5 * 0.3))
    assert hold_wait(1000.0, 0.3, 11) == pytest.approx(10 / 2000)
    assert hold_wait(5.0, 0.3, 1) == 0.0  # a batcher of one request sends each at once


def test_two_requests_per_window_have_the_closed_form_hold():
    # N = 2: the window closes at min(W, the next arrival X ~ Exp(rate)); E[waits] = E[min(W, X)] =
    # (1 - e^-m) / rate and E[requests] = 1 + (1 - e^-m), m = rate x W
    rate, window = 3.33, 0.3
    closed = 1 - math.exp(-rate * window)
    assert hold_wait(rate, window, 2) == pytest.approx(closed / rate / (1 + closed), rel=1e-12)


def _simulated_companions(rate: float, window: float, most: int | None, n: int = 200_000, replicas: int = 1) -> float:
    """Mean number of other requests sent to a request's replica in the same release as it, simulated event by event
    (seeded), each release dealt out round-robin over `replicas` (an even spread)."""
    rng = random.Random(11)
    t, opened, held, sizes = 0.0, None, 0, []
    for _ in range(n):
        t += rng.expovariate(rate)
        if opened is not None and t >= opened + window:
            sizes.append(held)
            opened, held = None, 0
        if opened is None:
            opened = t
        held += 1
        if most is not None and held == most:
            sizes.append(held)
            opened, held = None, 0
    groups = [len(range(g, k, replicas)) for k in sizes for g in range(replicas)]  # round-robin: k // R or one more
    return sum(s * (s - 1) for s in groups) / sum(sizes)  # each of a group's s requests has s - 1 companions


@pytest.mark.parametrize("rate, window, most", [(73.5, 0.3, 96), (73.5, 0.3, 10), (2.0, 0.3, None), (500.0, 0.05, 8),
                                                (3.33, 0.3, 2), (316.7, 0.3, 96)])
def test_the_requests_released_with_a_request_match_a_simulated_batcher(rate, window, most):
    assert companions(rate, window, most) == pytest.approx(_simulated_companions(rate, window, most), rel=0.01)


def test_a_release_has_the_closed_form_size_seen_by_its_requests():
    m = 2.0 * 0.3  # no cap: N = 1 + A, A ~ Poisson(m): E[N^2] / E[N] - 1 = (1 + 3m + m^2) / (1 + m) - 1
    assert companions(2.0, 0.3) == pytest.approx((1 + 3 * m + m * m) / (1 + m) - 1, rel=1e-12)
    p = 1 - math.exp(-3.33 * 0.3)  # two at most: N = 2 with P(A >= 1), so E[N^2] / E[N] = (1 + 3p) / (1 + p)
    assert companions(3.33, 0.3, 2) == pytest.approx((1 + 3 * p) / (1 + p) - 1, rel=1e-12)
    assert companions(5.0, 0.3, 1) == 0.0
    assert companions(2.0, 0.3, replicas=8) < 1e-6  # a release of more than 8 is past 30 sd: the request alone


@pytest.mark.parametrize("rate, window, most, replicas", [(73.5, 0.3, 96, 8), (316.7, 0.3, 96, 8), (40.0, 0.3, None, 8),
                                                          (73.5, 0.3, 10, 4)])
def test_a_release_spread_evenly_counts_the_others_on_the_request_s_replica(rate, window, most, replicas):
    """Spread evenly, a release of n puts n // R or one more on each replica; a request has the others of its group:
    not seen / R - 1 (fractions of a request), nor (seen - 1) / R (a random spread)."""
    simulated = _simulated_companions(rate, window, most, replicas=replicas)
    assert companions(rate, window, most, replicas=replicas) == pytest.approx(simulated, rel=0.01)


def test_a_full_release_of_12_over_8_replicas():
    # every window fills to 12 (10,000 requests/s): 4 replicas get two, 4 get one, so 8 of the 12 requests have one
    # other: 2/3 (seen / R - 1 would say 0.5, (seen - 1) / R 1.375)
    assert companions(1e4, 0.3, 12, replicas=8) == pytest.approx(8 / 12, rel=1e-9)


def _loads(input_tokens: int, engine: str):
    from sizeup.hardware.catalog import load_catalog
    from sizeup.ingest.hf_config import load_model
    from sizeup.workload.inference import InferenceConfig
    from sizeup.workload.serving import RequestMix, serving_load

    args = (load_model("llama-3.1-8b"), load_catalog().device("h100-sxm-80gb"),
            InferenceConfig(weights="fp8", kv_dtype="fp8", engine=engine),
            RequestMix(input_tokens=input_tokens, output_tokens=200))
    return lambda **load: serving_load(*args, Load(**load))


@pytest.mark.parametrize("engine", ["vllm", "vllm@0.6"])  # mixed steps (V1), prompt steps apart (V0)
def test_the_batcher_adds_its_wait_and_its_bursts_prefill_to_ttft_only(engine):
    at = _loads(2000, engine)
    plain = at(rate=20.0, replicas=2)
    held = at(rate=20.0, replicas=2, batcher_s=0.3, batcher_max=96)
    wider = at(rate=20.0, replicas=2, batcher_s=1.0, batcher_max=96)
    wait = hold_wait(20.0, 0.3, 96)  # the whole load's rate: the batcher stands in front of both replicas
    # its release lands at once: the first step carries the prompts of the requests released with a request (2.9 at
    # 20 requests/s for 0.3 s over 2 replicas), more than arrive at random during one step
    burst = held.ttft_s.typical - plain.ttft_s.typical - wait
    assert burst > 0
    assert wider.ttft_s.typical - plain.ttft_s.typical - hold_wait(20.0, 1.0, 96) > burst  # a longer window, more
    assert held.e2e_latency_s.typical - plain.e2e_latency_s.typical == pytest.approx(wait + burst)
    assert held.tpot_s == plain.tpot_s and held.output_tokens_per_s == plain.output_tokens_per_s
    assert any("front-end batcher" in a and "released with it" in a for a in held.assumptions)


@pytest.mark.parametrize("load", [dict(concurrency=8, batcher_s=0.3), dict(rate=5.0, batcher_max=96),
                                  dict(rate=5.0, batcher_s=0.0)])
def test_a_batcher_without_an_arrival_rate_or_a_window_is_refused(load):
    with pytest.raises(ConfigError, match="--batcher-window"):
        Load(**load)
