"""Closed loops and finite runs (workload/serving_runs.py): a closed loop of fixed-length requests in its steady state
and a run of N requests (all at once, at a concurrency or at a rate), stepped through the engine's scheduler
(physics invariants, no published figure)."""

import pytest

from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model
from sizeup.workload.inference import InferenceConfig
from sizeup.workload.serving import Load, RequestMix, dataset_mix, serving_load
from sizeup.workload.serving_runs import arrivals, lengths, regime

H100 = load_catalog().device("h100-sxm-80gb")
LLAMA8 = load_model("llama-3.1-8b")
SPREAD = RequestMix(input_tokens=300, output_tokens=250, input_spread=200, output_spread=300)


def _serve(load, mix, engine="vllm"):
    config = InferenceConfig(weights="fp8", kv_dtype="fp8", engine=engine)
    return serving_load(LLAMA8, H100, config, mix, load)


def _fixed(i, o=256):
    return RequestMix(input_tokens=i, output_tokens=o)


def test_fixed_lengths_at_a_concurrency_are_stepped_and_a_spread_keeps_the_staggered_model():
    loop = _serve(Load(concurrency=64), _fixed(1024))
    assert any("closed-loop concurrency of 64, in its steady state" in a for a in loop.assumptions)
    staggered = _serve(Load(concurrency=64, staggered=True), _fixed(1024))
    assert not any("in its steady state" in a for a in staggered.assumptions)
    assert regime(SPREAD, Load(concurrency=64), "continuous") is None
    zero = RequestMix(input_tokens=1024, output_tokens=256, input_spread=0, output_spread=0)
    assert regime(zero, Load(concurrency=64), "continuous") == "waves"
    assert regime(zero, Load(concurrency=64), "static") is None  # static batches are priced as before


def test_a_closed_loop_in_its_steady_state_has_lost_its_start(monkeypatch):
    """Its prompts are not a wave of C queued behind one another: TTFT far below that of the run's first C requests
    started together (a finite run of C), and no lower than a lone request's; it still grows with the prompt tokens
    the load brings (a longer prompt, more of them a cycle). The scheduler's own behaviour: vLLM V1's API server
    streaming every token in the intake's queue (front_floor, workload/front_process.py) is set aside, since shorter
    prompts (shorter steps, more tokens a second to stream) keep that process busier and can reverse the order."""
    from sizeup.engines.vllm import VLLM

    monkeypatch.setattr(VLLM, "front_floor", lambda self, requests: None)
    ttft = {(c, i): _serve(Load(concurrency=c), _fixed(i)).ttft_s.typical
            for c, i in ((1, 1024), (32, 1024), (128, 1024), (128, 4096))}
    start = _serve(Load(concurrency=128, num_prompts=128), _fixed(1024)).ttft_s.typical
    assert ttft[128, 1024] < start / 3
    assert ttft[1, 1024] * 0.95 <= ttft[32, 1024] <= ttft[128, 1024] < ttft[128, 4096]


def test_a_closed_loop_s_slots_take_independent_phases_not_an_even_spread():
    """Jitter leaves each slot at a phase of its own: the steady state averages seeded draws of independent uniform
    phases (one draw for a single slot, fewer for a large loop that meets many prompts in one draw), each draw the
    same every time; a loop whose whole prompts (one step each) take much of its cycle meets more of them than the
    even spread (the draw where they land farthest apart) and its TTFT is above that draw's, its throughput the
    same."""
    from sizeup.workload import serving_runs as runs

    assert runs.configurations(1) == 1 and runs.configurations(2) == runs.MAX_DRAWS
    assert runs.configurations(1000) == 1
    assert [runs.configurations(c) for c in (5, 25, 50, 100)] == sorted(
        [runs.configurations(c) for c in (5, 25, 50, 100)], reverse=True)

    class Start:  # two rounds of 4 slots, each request 2 s from its sending
        sent = [0.0] * 8
        done = [2.0] * 8

    draws = [runs._phases(Start, 4, 12, j) for j in range(3)]
    assert draws[0] == runs._phases(Start, 4, 12, 0)
    assert all(d[0] == 0.0 and d[:4] == sorted(d[:4]) and max(d[:4]) < 2.0 and d[4:] == [d[3]] * 8 for d in draws)
    assert len({tuple(d) for d in draws}) == 3

    mix = _fixed(8192, 128)  # prompts that take much of the cycle at 16 slots
    drawn = _serve(Load(concurrency=16), mix, "tensorrt-llm")  # whole prompts a step: two that meet queue
    drawn_phases = runs._phases

    def even(start, window, n, draw=0):
        cycle = sum(start.done[k] - start.sent[k] for k in range(window, 2 * window)) / window
        return [k * cycle / window for k in range(window)] + [(window - 1) * cycle / window] * (n - window)

    try:
        runs._phases = even
        spread = _serve(Load(concurrency=16), mix, "tensorrt-llm")
    finally:
        runs._phases = drawn_phases
    assert drawn.ttft_s.typical > spread.ttft_s.typical
    assert drawn.output_tokens_per_s.typical == pytest.approx(spread.output_tokens_per_s.typical, rel=0.1)


def test_a_wave_decodes_at_its_concurrency_and_reports_consistent_rates():
    s = _serve(Load(concurrency=32), _fixed(512, 512))
    assert s.e2e_latency_s.typical == pytest.approx(s.ttft_s.typical + 511 * s.tpot_s.typical, rel=0.05)
    assert s.output_tokens_per_s.typical == pytest.approx(s.requests_per_s.typical * 512)
    assert 16 < s.running.typical <= 32
    assert s.output_tokens_per_s.low <= s.output_tokens_per_s.typical <= s.output_tokens_per_s.high


def test_a_finite_run_is_no_faster_than_the_steady_state_and_tends_to_it():
    steady = _serve(Load(), SPREAD).output_tokens_per_s.typical
    small = _serve(Load(num_prompts=100), SPREAD)
    large = _serve(Load(num_prompts=20_000), SPREAD)
    assert small.output_tokens_per_s.typical < large.output_tokens_per_s.typical <= steady * 1.02
    assert large.output_tokens_per_s.typical == pytest.approx(steady, rel=0.15)
    assert any("finite run of 100 requests" in a for a in small.assumptions)


def test_a_finite_run_at_rate_inf_waits_for_the_prompts_ahead():
    few, many = _serve(Load(num_prompts=50), SPREAD), _serve(Load(num_prompts=2000), SPREAD)
    assert many.ttft_s.typical > 5 * few.ttft_s.typical
    fed = _serve(Load(num_prompts=2000, concurrency=32), SPREAD)  # a client holding 32 in flight: no queue
    assert fed.ttft_s.typical < many.ttft_s.typical


def test_finite_runs_take_a_count_up_to_the_cap_and_no_batcher():
    with pytest.raises(ConfigError, match="--num-prompts 0"):
        Load(num_prompts=0)
    with pytest.raises(ConfigError, match="1 to 1,000,000 requests"):
        Load(num_prompts=1_000_001)
    with pytest.raises(ConfigError, match="not a finite run"):
        Load(num_prompts=10, rate=2.0, batcher_s=0.3)
    assert Load(num_prompts=114_688, concurrency=7168).num_prompts == 114_688


def test_arrivals_are_a_deterministic_poisson_process():
    times = arrivals(20_000, 4.0)
    assert times == arrivals(20_000, 4.0) and times[0] == 0.0
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert sum(gaps) / len(gaps) == pytest.approx(0.25, rel=0.01)
    var = sum((g - 0.25) ** 2 for g in gaps) / len(gaps)
    assert var ** 0.5 == pytest.approx(0.25, rel=0.05)  # an exponential's: standard deviation = mean


def test_a_finite_run_at_a_rate_keeps_up_below_saturation_and_tends_to_the_burst_above():
    mix = _fixed(512, 128)
    slow = _serve(Load(num_prompts=200, rate=2.0), mix)
    assert any("sent at 2 requests/s (Poisson" in a for a in slow.assumptions)
    # the engine keeps up: the run lasts the arrivals' span and one request's e2e
    span = arrivals(200, 2.0)[-1] + slow.e2e_latency_s.typical
    assert slow.requests_per_s.typical == pytest.approx(200 / span, rel=0.05)
    lone = _serve(Load(concurrency=1), mix).ttft_s.typical
    assert slow.ttft_s.typical < 2 * lone
    burst, fast = _serve(Load(num_prompts=200), mix), _serve(Load(num_prompts=200, rate=1e6), mix)
    assert fast.output_tokens_per_s.typical == pytest.approx(burst.output_tokens_per_s.typical, rel=0.02)
    assert slow.output_tokens_per_s.typical < fast.output_tokens_per_s.typical


def test_lengths_are_deterministic_quantiles_of_the_mix():
    a, b = lengths(SPREAD, 4000), lengths(SPREAD, 4000)
    assert a == b
    outs = [o for _, o in a]
    assert sum(outs) / len(outs) == pytest.approx(250, rel=0.03)
    assert max(outs) > 1000 and min(outs) >= 1
    assert lengths(_fixed(100, 50), 3) == [(100, 50)] * 3


def test_a_dataset_without_a_stated_spread_drains_with_a_derived_one_and_says_so():
    mix = dataset_mix("sharegpt")
    assert mix.output_spread is None
    run = _serve(Load(num_prompts=200), mix)
    assert any("derived as 194 tokens, a coefficient of variation of 1" in a for a in run.assumptions)
    fixed = _serve(Load(num_prompts=200), RequestMix(input_tokens=mix.input_tokens, output_tokens=mix.output_tokens))
    assert run.output_tokens_per_s.typical < fixed.output_tokens_per_s.typical  # the drain tail of the longest
    assert regime(mix, Load(concurrency=32), "continuous") is None  # a dataset's lengths are never one wave


QWEN32 = load_model("qwen3-32b")


def test_a_big_model_on_one_gpu_overcommits_its_small_kv_pool_and_preempts():
    # 61 GiB of bf16 weights on an 80 GB H100: vLLM 0.11.0 admits prompts while their pages fit and preempts when
    # the running requests outgrow the pool (data/engines/vllm.yaml kv_preempt_recompute); the run says how often
    config = InferenceConfig(weights="bf16", engine="vllm@0.11.0")
    mix = RequestMix(input_tokens=227, output_tokens=194, output_spread=194)
    load = serving_load(QWEN32, H100, config, mix, Load(num_prompts=300))
    note = next(a for a in load.assumptions if a.startswith("KV admission"))
    assert "preemptions in this run" in note
    assert load.capacity >= load.running.typical  # as many prompts as the pool holds, up to max_num_seqs



def test_a_window_too_large_to_step_to_its_steady_state_is_one_wave_and_says_so():
    """Above STEADY_REQUESTS // 3 in flight the closed loop is priced as one wave from a start together (as many
    requests stepped as the window, not five times it), and a window past the finite-run cap is refused in one line."""
    from sizeup.workload.serving import MAX_PROMPTS
    from sizeup.workload.serving_runs import STEADY_REQUESTS, stepped_steady
    big = STEADY_REQUESTS // 3 + 1
    assert stepped_steady(big - 1) and not stepped_steady(big)
    wave = _serve(Load(concurrency=big), _fixed(128, 16))
    assert any(f"closed-loop concurrency of {big:,}: one wave" in a for a in wave.assumptions)
    assert not any("in its steady state" in a for a in wave.assumptions)
    with pytest.raises(ConfigError, match=f"--concurrency {MAX_PROMPTS + 1}: expected 1 to"):
        Load(concurrency=MAX_PROMPTS + 1)
