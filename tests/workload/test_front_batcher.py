"""The front-end batcher (workload/front_batcher.py, --batcher-window): a harness that gathers Poisson arrivals for
up to W seconds or N requests before it sends them on."""

import math
import random

import pytest

from sizeup.errors import ConfigError
from sizeup.workload.front_batcher import hold_wait
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


def test_the_batcher_adds_its_wait_to_ttft_and_end_to_end_latency_only():
    from sizeup.hardware.catalog import load_catalog
    from sizeup.ingest.hf_config import load_model
    from sizeup.workload.inference import InferenceConfig
    from sizeup.workload.serving import RequestMix, serving_load

    args = (load_model("llama-3.1-8b"), load_catalog().device("h100-sxm-80gb"),
            InferenceConfig(weights="fp8", kv_dtype="fp8", engine="vllm"), RequestMix(input_tokens=500, output_tokens=200))
    plain = serving_load(*args, Load(rate=20.0, replicas=2))
    held = serving_load(*args, Load(rate=20.0, replicas=2, batcher_s=0.3, batcher_max=96))
    wait = hold_wait(20.0, 0.3, 96)  # the whole load's rate: the batcher stands in front of both replicas
    assert held.ttft_s.typical == pytest.approx(plain.ttft_s.typical + wait)
    assert held.e2e_latency_s.typical == pytest.approx(plain.e2e_latency_s.typical + wait)
    assert held.tpot_s == plain.tpot_s and held.output_tokens_per_s == plain.output_tokens_per_s
    assert any("front-end batcher" in a for a in held.assumptions)


@pytest.mark.parametrize("load", [dict(concurrency=8, batcher_s=0.3), dict(rate=5.0, batcher_max=96),
                                  dict(rate=5.0, batcher_s=0.0)])
def test_a_batcher_without_an_arrival_rate_or_a_window_is_refused(load):
    with pytest.raises(ConfigError, match="--batcher-window"):
        Load(**load)
