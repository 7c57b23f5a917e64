"""The engine's front end (one API-server process, busy ExecutionModel.request_intake per request, served one after
another) in the steady state of workload/serving.py: a throughput cap at 1 / its busy time, an M/D/1 wait under
Poisson arrivals, and a lone request's whole time outside the steps (request_overhead) in TTFT once. vLLM's
request_intake_s typical is 3.3 ms (data/engines/vllm.yaml, fitted on the burst rows of PRs 23369 / 23696): at most
~300 requests/s; its request_overhead_s 12 ms. From V1 the same process streams every token (front_floor, workload/
front_process.py): the tests of the intake queue alone set that streaming aside (`intake_only`), one test keeps it."""

from __future__ import annotations

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model
from sizeup.workload.inference import InferenceConfig, execution_for
from sizeup.workload.serving import Load, RequestMix, serving_load

H100 = load_catalog().device("h100-sxm-80gb")
LLAMA8 = load_model("llama-3.1-8b")
VLLM = InferenceConfig(weights="bf16", kv_dtype="fp16", engine="vllm")
SHORT = RequestMix(input_tokens=64, output_tokens=4)  # requests an 8B model on an H100 finishes by the thousand


@pytest.fixture
def intake_only(monkeypatch):
    """vLLM's API server taking requests in and streaming nothing (the intake queue alone)."""
    from sizeup.engines.vllm import VLLM as Engine

    monkeypatch.setattr(Engine, "front_floor", lambda self, requests: None)


def _service() -> float:
    """The front end's busy time per request (its queue's service time)."""
    return execution_for(H100, VLLM).request_intake().typical


def _latency() -> float:
    return execution_for(H100, VLLM).request_overhead()[0].typical


def test_the_busy_time_is_below_the_latency():
    """vLLM's intake (3.3 ms) is part of the 12 ms a lone request spends outside the steps."""
    assert _service() == pytest.approx(3.3e-3)
    assert _latency() == pytest.approx(12e-3)


def test_short_requests_offline_are_capped_by_the_front_end():
    est = serving_load(LLAMA8, H100, VLLM, SHORT, Load())
    assert est.requests_per_s.typical == pytest.approx(1 / _service(), rel=1e-6)
    assert any("one API-server process" in a and "capped" in a for a in est.assumptions)


def test_a_rate_over_the_front_end_is_saturated_at_it():
    est = serving_load(LLAMA8, H100, VLLM, SHORT, Load(rate=2 / _service()))
    assert est.saturated
    assert est.requests_per_s.typical == pytest.approx(1 / _service(), rel=1e-6)


def test_a_closed_loop_over_the_front_end_waits_there():
    """A closed loop of C = 256: the engine runs the batch b that finishes 1 / service requests a second, the
    other C - b wait at the front end: TTFT at least (C - b) x service."""
    staggered = RequestMix(input_tokens=64, output_tokens=4, input_spread=16, output_spread=2)
    est = serving_load(LLAMA8, H100, VLLM, staggered, Load(concurrency=256))
    assert est.requests_per_s.typical == pytest.approx(1 / _service(), rel=1e-6)
    assert est.running.typical < 256
    assert est.ttft_s.typical >= (256 - est.running.typical) * _service()


def test_waves_over_the_front_end_are_stepped_through_it(intake_only):
    """Fixed lengths at a concurrency are stepped by the scheduler with the front end in it: no more than
    1 / service requests a second get through (measured over the finishes of the steady state's rounds: 1 % for
    the window's edges)."""
    est = serving_load(LLAMA8, H100, VLLM, SHORT, Load(concurrency=256))
    assert 0.9 / _service() < est.requests_per_s.typical <= 1.01 / _service()


def test_streaming_in_the_same_process_lowers_the_waves_below_the_intake_cap():
    """With the API server also streaming every token (V1's front_floor), the same waves get fewer requests through
    than the intake alone allows: the process's time goes to both."""
    est = serving_load(LLAMA8, H100, VLLM, SHORT, Load(concurrency=256))
    assert execution_for(H100, VLLM).front_floor(1.0) is not None
    assert est.requests_per_s.typical < 0.95 / _service()


def test_a_modest_rate_waits_as_an_md1_queue():
    """Poisson at 120 requests/s: the front end is 40 % busy (120 x 3.3 ms), its mean wait rho s / (2 (1 - rho)) on
    top of the request's own time outside the steps."""
    s = _service()
    rate = 120.0
    mix = RequestMix(input_tokens=200, output_tokens=50)
    est = serving_load(LLAMA8, H100, VLLM, mix, Load(rate=rate))
    rho = rate * s
    assert any(f"{rho:.0%} busy" in a for a in est.assumptions)
    assert not est.saturated


def test_the_md1_wait_is_added_once_beside_the_service(monkeypatch):
    """TTFT with the front end less TTFT without it = the request's latency outside the steps + the M/D/1 wait of
    the process's busy time, no more (not counted twice)."""
    from sizeup.engines.base import ExecutionModel

    s, latency, rate = _service(), _latency(), 40.0
    mix = RequestMix(input_tokens=200, output_tokens=50)
    model = execution_for(H100, VLLM)
    with_front = serving_load(LLAMA8, H100, VLLM, mix, Load(rate=rate), execution=model)
    monkeypatch.setattr(ExecutionModel, "request_overhead", lambda self: None)
    monkeypatch.setattr(ExecutionModel, "request_intake", lambda self: None)
    bare = serving_load(LLAMA8, H100, VLLM, mix, Load(rate=rate), execution=model)
    rho = rate * s
    assert with_front.ttft_s.typical - bare.ttft_s.typical == pytest.approx(latency + rho * s / (2 * (1 - rho)),
                                                                            rel=1e-6)


def test_a_burst_is_taken_in_at_the_busy_time_and_pays_the_rest_of_the_latency_once(monkeypatch, intake_only):
    """--num-prompts N sent at once: the k-th request enters after k x the busy time (3.3 ms, not the 12 ms
    latency), and each TTFT carries the latency less the busy time once: with the busy time set to the whole
    latency, TTFT grows by about (N / 2) x the difference less that difference."""
    from sizeup.engines.base import ExecutionModel

    n = 200
    mix = RequestMix(input_tokens=64, output_tokens=16)
    model = execution_for(H100, VLLM)
    burst = serving_load(LLAMA8, H100, VLLM, mix, Load(num_prompts=n), execution=model)
    assert any(f"after k x {_service() * 1e3:.3g} ms" in a and "12 ms outside the steps" in a
               for a in burst.assumptions)
    gap = _latency() - _service()
    monkeypatch.setattr(ExecutionModel, "request_intake", lambda self: self.request_overhead()[0])
    whole = serving_load(LLAMA8, H100, VLLM, mix, Load(num_prompts=n), execution=model)
    expected = (n + 1) / 2 * gap - gap  # the mean wait in the queue grows, the once-paid remainder goes
    assert whole.ttft_s.typical - burst.ttft_s.typical == pytest.approx(expected, rel=0.15)
