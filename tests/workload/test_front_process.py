"""The front process that takes requests in and streams tokens from one thread (workload/front_process.py), alone and
stepped by the scheduler (workload/scheduler.py `stream`), on the step prices of tests/workload/test_scheduler.py."""

from __future__ import annotations

import random

import pytest

from sizeup.workload.front_process import FrontProcess
from sizeup.workload.scheduler import run


def decode(b: int) -> float:
    return 0.1 + 0.001 * b


def step(b: int, p: int) -> float:
    return 0.1 + 0.001 * b + 0.01 * p


def test_a_request_sent_while_the_process_streams_waits_behind_that_work():
    proc = FrontProcess(None, [0.0, 0.0], intake=0.1, per_token=0.01)
    assert proc.stream(1.0, 50) == pytest.approx(1.5)  # 50 tokens of 10 ms after the step ending at 1 s
    assert proc.send(0, 1.2) == pytest.approx(1.6)  # sent at 1.2 s: in at 1.5 + 0.1, not 1.3
    assert proc.send(1, 3.0) == pytest.approx(3.1)  # the process idle: no wait


@pytest.mark.parametrize("seed", range(6))
def test_a_run_of_decode_steps_streams_as_its_steps_one_by_one(seed):
    """stream_run's closed form (and the open loop's requests taken in between the steps) against one step at a time,
    where the process keeps up (s < dt) and where it does not (s > dt)."""
    rng = random.Random(seed)
    times = sorted(rng.uniform(0.0, 3.0) for _ in range(8))
    dt, count, tokens = rng.uniform(0.05, 0.3), rng.randint(1, 30), rng.randint(1, 40)
    per, intake, start = rng.uniform(1e-4, 1e-2), rng.uniform(0.01, 0.2), rng.uniform(0.0, 0.5)
    whole, one = (FrontProcess(times, [0.0] * 8, intake, per) for _ in range(2))
    at_end = whole.stream_run(start, dt, count, tokens)
    for i in range(1, count + 1):
        last = one.stream(start + i * dt, tokens)
    assert at_end == pytest.approx(last)
    assert whole.enters[:whole.queued] == pytest.approx(one.enters[:one.queued]) and whole.queued == one.queued


def test_a_process_that_streams_nothing_and_takes_in_at_once_changes_no_run():
    """A per-token time too small to matter and no intake time: the lazy open loop and the burst give the first tokens
    and finishes of the scheduler without a front process (a closed loop sends its next request once the last token
    is streamed, a hair after the step: its admissions may move a step)."""
    rng = random.Random(3)
    requests = [(rng.randint(5, 60), rng.randint(1, 12)) for _ in range(40)]
    arrivals = sorted(rng.uniform(0.0, 4.0) for _ in range(40))
    for kwargs in ({"arrivals": arrivals}, {}):
        bare = run(requests, limit=8, budget=64, mixes=True, step=step, decode=decode, **kwargs)
        fronted = run(requests, limit=8, budget=64, mixes=True, step=step, decode=decode, stream=1e-12, **kwargs)
        assert fronted.first == pytest.approx(bare.first) and fronted.done == pytest.approx(bare.done)
        assert fronted.makespan == pytest.approx(bare.makespan)


def test_in_an_open_loop_the_one_thread_only_delays_tokens_never_the_steps():
    """Requests sent at their times enter as the front end alone would have let them (intake first where it was sent
    first), so the engine runs the same steps; its tokens reach the clients no earlier than the steps end: an intake
    queued before a step's end delays that step's streaming (one thread)."""
    rng = random.Random(5)
    requests = [(rng.randint(5, 60), rng.randint(1, 12)) for _ in range(40)]
    arrivals = sorted(rng.uniform(0.0, 2.0) for _ in range(40))
    bare = run(requests, arrivals=arrivals, limit=8, budget=64, mixes=True, step=step, decode=decode, front=0.03)
    fronted = run(requests, arrivals=arrivals, limit=8, budget=64, mixes=True, step=step, decode=decode, front=0.03,
                  stream=1e-3)
    assert fronted.busy == pytest.approx(bare.busy) and fronted.held == pytest.approx(bare.held)
    assert all(f >= b - 1e-12 for f, b in zip(fronted.first, bare.first))
    assert all(f >= b - 1e-12 for f, b in zip(fronted.done, bare.done)) and fronted.makespan >= bare.makespan
    assert fronted.first != pytest.approx(bare.first)


def test_a_first_token_made_while_the_process_takes_a_burst_in_waits_for_it():
    """Three requests sent at once, taken in 0.25 s each (in at 0.25, 0.5, 0.75 s); the first one's prompt step ends at
    0.45 s, but the process takes requests 2 and 3 in first (sent before that token was made), so it streams it at
    0.75 + 0.01 s; request 2's token (step 0.5-0.7 s) comes right after; request 3's step ends at 0.95 s, the process
    idle by then."""
    trace = run([(10, 1)] * 3, limit=8, budget=None, mixes=True, step=step, decode=decode, front=0.25, stream=0.01)
    assert trace.first == pytest.approx([0.76, 0.77, 0.96])
    assert trace.makespan == pytest.approx(0.96)
    bare = run([(10, 1)] * 3, limit=8, budget=None, mixes=True, step=step, decode=decode, front=0.25)
    assert bare.first == pytest.approx([0.45, 0.7, 0.95])


def test_a_closed_loop_sends_the_next_request_when_its_client_has_the_last_token():
    """Window 1: request 1's prompt step ends at 0.3 s, its first token streamed by 0.35 s; its one decode step ends at
    0.401 s, streamed by 0.451 s, when request 2 is sent (in at 0.551 s, prompt step to 0.751 s, streamed 0.801 s)."""
    trace = run([(10, 2)] * 2, window=1, limit=8, budget=None, mixes=True, step=step, decode=decode, front=0.1,
                stream=0.05)
    assert trace.first[0] == pytest.approx(0.35) and trace.done[0] == pytest.approx(0.451)
    assert trace.sent[1] == pytest.approx(0.451) and trace.first[1] == pytest.approx(0.801)


def test_a_served_burst_waits_for_the_process_that_streams_its_tokens(monkeypatch):
    """SGLang's HTTP process (front_floor: 119 µs a token) takes a burst in and streams from one thread: the burst's
    TTFT grows over the intake queue alone, and the run says why; its steps (the front floor under each) as before."""
    from sizeup.hardware.catalog import load_catalog
    from sizeup.ingest.hf_config import load_model
    from sizeup.workload import serving_runs
    from sizeup.workload.inference import InferenceConfig, execution_for
    from sizeup.workload.serving import Load, RequestMix, serving_load

    h100, arch = load_catalog().device("h100-sxm-80gb"), load_model("llama-3.1-8b")
    cfg = InferenceConfig(weights="bf16", kv_dtype="fp16", engine="sglang")
    model = execution_for(h100, cfg)
    assert serving_runs.streaming(model, "typical") == pytest.approx(model.front_floor(1.0).typical)
    mix, load = RequestMix(input_tokens=200, output_tokens=200), Load(num_prompts=400)
    shared = serving_load(arch, h100, cfg, mix, load, execution=model)
    assert any("streams every token from the same process" in a for a in shared.assumptions)
    monkeypatch.setattr(serving_runs, "streaming", lambda execution, corner: 0.0)
    alone = serving_load(arch, h100, cfg, mix, load, execution=model)
    assert shared.ttft_s.typical > alone.ttft_s.typical
    assert not any("streams every token from the same process" in a for a in alone.assumptions)
