"""The one step simulator of an engine's scheduler (workload/scheduler.py), on step prices simple enough to follow
by hand: a pure decode step of b sequences takes 0.1 + 0.001 b s, a step with p prompt tokens beside b decodes
0.1 + 0.001 b + 0.01 p s."""

from __future__ import annotations

import pytest

from sizeup.workload.scheduler import run


def decode(b: int) -> float:
    return 0.1 + 0.001 * b


def step(b: int, p: int) -> float:
    return 0.1 + 0.001 * b + 0.01 * p


def test_a_closed_loop_wave_prefills_together_then_decodes_together():
    trace = run([(100, 5)] * 4, limit=8, window=4, budget=None, mixes=True, step=step, decode=decode)
    prompt = step(0, 400)  # the four prompts in one step, no decode yet
    assert trace.first == pytest.approx([prompt] * 4)
    assert trace.done == pytest.approx([prompt + 4 * decode(4)] * 4)  # 4 more tokens each, at batch 4
    assert trace.makespan == pytest.approx(prompt + 4 * decode(4))
    assert trace.prefill == pytest.approx(prompt)


def test_a_closed_loop_with_sending_times_sends_at_its_time_or_when_its_slot_frees():
    """One slot: the second request's time (0.5 s) passes while the first runs, so it is sent at the first's finish
    (its TTFT from then, not from 0.5 s); the third's time (100 s) comes after its slot frees: sent then."""
    trace = run([(50, 3)] * 3, arrivals=[0.0, 0.5, 100.0], window=1, limit=8, budget=None, mixes=True, step=step,
                decode=decode)
    alone = step(0, 50) + 2 * decode(1)
    assert trace.sent == pytest.approx([0.0, alone, 100.0])
    assert [trace.first[k] - trace.sent[k] for k in range(3)] == pytest.approx([step(0, 50)] * 3)
    assert trace.done[2] == pytest.approx(100.0 + alone)


def test_a_closed_loop_request_sent_at_its_time_passes_the_front_end_once():
    """A front end of 0.2 s a request; two slots, one held by a long request decoding at 0.101 s a step. The third
    request's time (5 s) comes after its slot frees: it enters at 5.2 s and is admitted at the next step's boundary,
    so its TTFT is the front end's time once, less than a step's wait, and its prompt step (not 0.2 s more)."""
    trace = run([(50, 200), (50, 3), (50, 3)], arrivals=[0.0, 0.0, 5.0], window=2, limit=8, budget=None, mixes=True,
                step=step, decode=decode, front=0.2)
    assert trace.sent[2] == pytest.approx(5.0)
    assert 0.2 + step(1, 50) <= trace.first[2] - trace.sent[2] <= 0.2 + decode(1) + step(1, 50)


def test_requests_far_apart_run_alone():
    trace = run([(50, 3), (50, 3)], arrivals=[0.0, 100.0], limit=8, budget=None, mixes=True, step=step,
                decode=decode)
    assert trace.first[0] == pytest.approx(step(0, 50))
    assert trace.done[0] == pytest.approx(step(0, 50) + 2 * decode(1))
    assert trace.first[1] - 100.0 == pytest.approx(step(0, 50))  # idle until it arrives
    assert trace.busy == pytest.approx(2 * (step(0, 50) + 2 * decode(1)))


def test_a_prompt_longer_than_the_budget_is_chunked():
    trace = run([(10, 2)], limit=1, budget=4, mixes=True, step=step, decode=decode)
    assert trace.first[0] == pytest.approx(step(0, 4) + step(0, 4) + step(0, 2))


def test_whole_prompts_wait_for_a_step_they_fit():
    trace = run([(6, 2), (6, 2)], limit=2, budget=8, mixes=False, chunked=False, step=step, decode=decode)
    assert trace.first[0] == pytest.approx(step(0, 6))
    assert trace.first[1] == pytest.approx(2 * step(0, 6))  # 6 + 6 > 8: the second prompt takes the next step
    # prompt steps apart: the first request's decode waited for the second prompt's step
    assert trace.done[0] == pytest.approx(2 * step(0, 6) + decode(2))


def test_mixed_steps_decode_beside_prompts():
    trace = run([(6, 3), (6, 3)], limit=2, budget=8, mixes=True, chunked=False, step=step, decode=decode)
    assert trace.first[1] == pytest.approx(step(0, 6) + step(1, 6))  # its prompt rode with the first's decode
    assert trace.done[0] == pytest.approx(step(0, 6) + step(1, 6) + decode(2))


def test_the_limit_holds_requests_back():
    trace = run([(10, 2)] * 3, limit=1, budget=None, mixes=True, step=step, decode=decode)
    one = step(0, 10) + decode(1)
    assert trace.done == pytest.approx([one, 2 * one, 3 * one])
    assert trace.order == [0, 1, 2]


def test_a_prompt_is_admitted_only_at_a_scheduling_point():
    # the first request decodes 9 tokens; the second arrives after its first decode step, but with 4 decode steps
    # per scheduling decision it is admitted only after the 4th
    first_prompt = step(0, 10)
    trace = run([(10, 10), (10, 2)], arrivals=[0.0, first_prompt + 0.05], limit=4, budget=None, mixes=True,
                step=step, decode=decode, per_schedule=4)
    assert trace.first[1] == pytest.approx(first_prompt + 4 * decode(1) + step(1, 10))


def test_the_window_sends_a_request_when_one_finishes():
    trace = run([(10, 2), (10, 4), (10, 2)], limit=8, window=2, budget=None, mixes=True, step=step, decode=decode)
    assert trace.sent[2] == pytest.approx(trace.done[0])  # sent when the first finished
    assert trace.order[0] == 0


def test_a_burst_queues_at_the_front_end_one_request_after_another():
    """N requests sent at once pass the engine's front end (service time f) one after another: the k-th (from 1)
    enters the scheduler at k x f. With a scheduler that admits at most one request, each prompt step starts as
    soon as both the engine is free and the request is through."""
    f = 0.25
    trace = run([(10, 1)] * 4, limit=1, budget=None, mixes=True, step=step, decode=decode, front=f)
    one = step(0, 10)  # 0.2 s: shorter than f, so the engine waits for the front end
    assert trace.sent == [0.0] * 4
    assert trace.first == pytest.approx([(k + 1) * f + one for k in range(4)])
    assert trace.makespan == pytest.approx(4 * f + one)


def test_a_burst_through_a_fast_front_end_waits_for_the_engine_instead():
    """A front end faster than the engine adds its time once to the first request only: later ones are through
    before the engine is free."""
    f = 0.01
    trace = run([(10, 1)] * 3, limit=1, budget=None, mixes=True, step=step, decode=decode, front=f)
    one = step(0, 10)
    assert trace.first == pytest.approx([f + one, f + 2 * one, f + 3 * one])


def test_a_sparse_stream_pays_the_front_end_once_without_a_wait():
    """Requests further apart than the front end's time: each enters `front` after its sending, no queue."""
    arrivals = [0.0, 5.0, 11.0]
    f = 0.05
    bare = run([(50, 3)] * 3, arrivals=arrivals, limit=8, budget=None, mixes=True, step=step, decode=decode)
    fronted = run([(50, 3)] * 3, arrivals=arrivals, limit=8, budget=None, mixes=True, step=step, decode=decode,
                  front=f)
    assert [b - a for a, b in zip(bare.first, fronted.first)] == pytest.approx([f] * 3)
    assert fronted.sent == arrivals


def test_a_closed_loop_sends_the_next_request_through_the_front_end_when_one_finishes():
    """Window 1: request 2 is sent when request 1 finishes and enters f later."""
    f = 0.3
    trace = run([(10, 1)] * 2, window=1, limit=8, budget=None, mixes=True, step=step, decode=decode, front=f)
    one = step(0, 10)
    assert trace.sent == pytest.approx([0.0, f + one])
    assert trace.first == pytest.approx([f + one, 2 * (f + one)])
