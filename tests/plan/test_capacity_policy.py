"""The planner's serving simulation schedules as the engine's batching policy says (mixed steps, prompt steps of
their own, static batches), and its steady state agrees with workload/serving.py `serving_load` at the same load:
the same engine, device, format, request lengths and KV capacity."""

from dataclasses import replace

import pytest

from sizeup.ingest.load import load_model
from sizeup.plan.capacity import ReplicaModel, simulate
from sizeup.plan.serving import replica_model
from sizeup.workload.inference import InferenceConfig, estimate_inference, execution_for
from sizeup.workload.serving import Load, RequestMix, serving_load

THROUGHPUT_TOLERANCE = 0.15
"""Offline and Poisson throughput of the simulation within 15% of serving_load's typical figure: the simulation's
decode table is priced at powers of two (serving_load: powers of 2^(1/2)) and its prefill is linear in the tokens
(two priced prompts), so the two differ by interpolation, not by schedule."""

TPOT_TOLERANCE = 0.15
"""Mean TPOT at half the saturated rate: within 15% (serving_load takes the running batch from Little's law, the
simulation from the simulated queue)."""


def _pair(arch, device, engine: str, quant: str, prompt: int, output: int):
    cfg = InferenceConfig(prompt=prompt, output=output, weights=quant, engine=engine)
    execution = execution_for(device, cfg)
    kv = min(estimate_inference(arch, device, cfg, execution=execution).max_batch, 256)
    return cfg, execution, kv, replica_model(arch, device, cfg, kv, execution)


@pytest.mark.parametrize("engine, quant, policy", [
    ("vllm", "bf16", "mixed"), ("tensorrt-llm", "fp8", "mixed"), ("sglang", "bf16", "apart"), ("hf", "bf16", "static"),
])
def test_offline_throughput_agrees_with_serving_load(h100, llama8b, engine, quant, policy):
    """Every request queued at once: the simulation's output tokens/s is serving_load's offline figure."""
    cfg, execution, kv, model = _pair(llama8b, h100, engine, quant, 1000, 250)
    assert model.scheduling == ("static" if policy == "static" else "continuous")
    assert model.mixed_steps == (policy == "mixed")
    mix = RequestMix(input_tokens=1000, output_tokens=250)
    steady = serving_load(llama8b, h100, cfg, mix, Load(), execution=execution, kv_capacity=kv)
    # mixed steps without the engine's host time: every request queued at once with one output length finishes in
    # waves, so the simulation runs decode-only steps that trtllm-serve's per-token front process floors, while
    # serving_load's steady state spreads the prompts over every step (which the GPU's time then exceeds): there the
    # GPU's work is compared. Prompt steps apart are floored alike in both (their decode-only steps).
    sim = simulate(replace(model, host_s=()) if policy == "mixed" else model, 1.0, 1000, 250, arrivals=[0.0] * 2000)
    assert sim.output_tokens_per_s == pytest.approx(steady.output_tokens_per_s.typical, rel=THROUGHPUT_TOLERANCE)


@pytest.mark.parametrize("engine, quant", [("vllm", "bf16"), ("tensorrt-llm", "fp8"), ("sglang", "bf16")])
def test_poisson_load_agrees_with_serving_load(h100, llama8b, engine, quant):
    """Poisson arrivals at half the saturated rate: the same throughput and, within the tolerance, the same TPOT."""
    cfg, execution, kv, model = _pair(llama8b, h100, engine, quant, 1200, 300)
    mix = RequestMix(input_tokens=1200, output_tokens=300)
    rate = 0.5 * serving_load(llama8b, h100, cfg, mix, Load(), execution=execution,
                              kv_capacity=kv).requests_per_s.typical
    steady = serving_load(llama8b, h100, cfg, mix, Load(rate=rate), execution=execution, kv_capacity=kv)
    sim = simulate(model, rate, 1200, 300, requests=3000, seed=2)
    assert sim.stable and not steady.saturated
    assert sim.output_tokens_per_s == pytest.approx(steady.output_tokens_per_s.typical, rel=THROUGHPUT_TOLERANCE)
    assert sim.tpot["mean"] == pytest.approx(steady.tpot_s.typical, rel=TPOT_TOLERANCE)



@pytest.mark.parametrize("name, gpus, rho", [("llama-2-70b", 2, 0.9), ("mixtral-8x7b", 1, 0.8)])
def test_near_saturation_the_simulation_and_serving_load_agree(h100, name, gpus, rho):
    """Close to saturation (an MLPerf Server run: short prompts, Poisson arrivals at 0.8-0.9 of the offline rate) the
    running batch, and so TPOT, moves several times faster than the step time (the step grows with the batch), so
    the two queues agree only where they price one mixed step alike: decodes and prompt tokens as one GEMM per
    weight matrix (before both did, the event simulation's TPOT was 0.64 and 0.78 of serving_load's here)."""
    arch = load_model(name)
    cfg = InferenceConfig(prompt=222, output=294, weights="fp8", engine="tensorrt-llm", gpus=gpus)
    execution = execution_for(h100, cfg)
    kv = min(estimate_inference(arch, h100, cfg, execution=execution).max_batch, 512)
    model = replica_model(arch, h100, cfg, kv, execution)
    mix = RequestMix(input_tokens=222, output_tokens=294)
    rate = rho * serving_load(arch, h100, cfg, mix, Load(), execution=execution, kv_capacity=kv).requests_per_s.typical
    steady = serving_load(arch, h100, cfg, mix, Load(rate=rate), execution=execution, kv_capacity=kv)
    sim = simulate(model, rate, 222, 294, requests=6000, seed=2)
    assert sim.stable and not steady.saturated
    assert sim.tpot["mean"] == pytest.approx(steady.tpot_s.typical, rel=TPOT_TOLERANCE)

def _toy(**policy) -> ReplicaModel:
    return ReplicaModel(prefill_fixed_s=0.02, prefill_per_token_s=5e-5, decode_batches=(1, 8, 32, 128),
                        decode_step_s=(0.010, 0.011, 0.014, 0.025), max_batch=128, **policy)


def test_mixed_steps_do_not_stall_decodes_as_prompt_steps_do():
    """Under the same load a prompt step of its own stops every running sequence for its whole time; a mixed step
    adds only the prompt's marginal time, so TPOT is lower."""
    apart = simulate(_toy(), 6.0, 1000, 200, requests=1500, seed=4)
    mixed = simulate(_toy(mixed_steps=True, chunked_prefill=True, max_step_tokens=2048), 6.0, 1000, 200,
                     requests=1500, seed=4)
    assert mixed.tpot["p50"] < apart.tpot["p50"]


def test_a_step_token_budget_chunks_a_long_prompt():
    """A 4,000-token prompt alone on the replica in 512-token mixed steps takes ceil(4000 / 512) = 8 steps. Each
    step runs one GEMM per weight matrix over its rows: max(weight read 0.010 s, 512 x 5e-5 s of compute), so every
    chunk is compute-bound and the weights' read hides under it: TTFT = 4000 x 5e-5, plus what each chunk's matrix
    products near their ridge point take beyond max(weight read, compute) (price/streaming.py; 7 chunks of 512
    tokens, one of 416). No prefill's own fixed time: the chunks ride in steps the replica runs anyway."""
    from sizeup.price import streaming

    model = _toy(mixed_steps=True, chunked_prefill=True, max_step_tokens=512)
    sim = simulate(model, 1.0, 4000, 2, arrivals=[0.0])
    ridge = 7 * streaming.excess(0.010, 512 * 5e-5, "typical") + streaming.excess(0.010, 416 * 5e-5, "typical")
    assert ridge > 0.02
    assert sim.ttft["p50"] == pytest.approx(4000 * 5e-5 + ridge, rel=1e-9)


def test_a_mixed_step_reads_the_weights_once():
    """A mixed step of 8 decodes and a 100-token prompt chunk is one GEMM per weight matrix at 108 rows: memory-bound
    here (108 x 5e-5 s < 0.010 s of weight read), so it takes the decode step's time and the chunk rides in the
    read the decodes pay anyway (the ridge excess aside), not a second read of the weights."""
    from sizeup.price import streaming

    model = _toy(mixed_steps=True, chunked_prefill=True, max_step_tokens=108)
    decodes = simulate(model, 1.0, 100, 30, arrivals=[0.0] * 8)  # 8 requests: their prompts, then decodes
    late = simulate(model, 1.0, 100, 30, arrivals=[0.0] * 8 + [decodes.e2e["p50"] / 2])  # a 9th mid-decode
    ridge = streaming.excess(0.010, 108 * 5e-5, "typical") - streaming.excess(0.010, 8 * 5e-5, "typical")
    step = model.decode_s(8) + streaming.excess(0.010, 8 * 5e-5, "typical")
    # admitted at the end of the running step, then one mixed step: between one and two such steps. A second read
    # of the weights for the chunk (0.010 s, less the decodes' compute) would put it past two.
    assert step + ridge <= late.ttft_samples[-1] <= 2 * (step + ridge)


def test_static_batches_wait_for_the_running_batch():
    """Static batching: a request arriving while a batch runs starts only after that batch's last token."""
    model = _toy(scheduling="static")
    sim = simulate(model, 1.0, 100, 50, arrivals=[0.0, 0.001])
    run = model.prefill_s(100) + 49 * 0.010
    assert sim.ttft_samples[1] == pytest.approx(run + model.prefill_s(100) - 0.001, rel=1e-9)


def test_max_sequences_caps_the_running_batch(h100, llama8b):
    """The engine's max_sequences bounds the simulated batch as the KV pool does."""
    cfg = InferenceConfig(prompt=200, output=100, weights="bf16", engine="vllm")
    execution = execution_for(h100, cfg)
    cap = execution.batching.max_sequences
    assert cap is not None
    assert replica_model(llama8b, h100, cfg, cap * 4, execution).max_batch == cap


def test_multi_step_scheduling_admits_a_prompt_only_between_runs():
    """vLLM V0's num_scheduler_steps 4: a prompt arriving during a run of 4 decode steps waits for its end. Request
    A's prompt (25 ms) ends at 25 ms; B arrives at 26 ms; one step at a time it is admitted after the first decode
    step (35 ms), with runs of 4 after the fourth (65 ms), and its own 25 ms prompt step follows. (A decode step of
    one sequence pays what price/streaming.py adds beyond its weight read: 7 us here.)"""
    from sizeup.price import streaming

    step = 0.010 + streaming.excess(0.010, 5e-5, "typical")
    one = simulate(_toy(), 1.0, 100, 50, arrivals=[0.0, 0.026])
    four = simulate(_toy(steps_per_schedule=4), 1.0, 100, 50, arrivals=[0.0, 0.026])
    assert one.ttft_samples[1] == pytest.approx(0.025 + step + 0.025 - 0.026, rel=1e-9)
    assert four.ttft_samples[1] == pytest.approx(0.025 + 4 * step + 0.025 - 0.026, rel=1e-9)


@pytest.mark.parametrize("engine, lag", [("vllm", 0), ("sglang", 1), ("tensorrt-llm", 0)])
def test_the_simulation_adds_the_engines_front_end_to_ttft(h100, llama8b, engine, lag):
    """The first token's time outside the simulated steps (ExecutionModel.request_overhead: the front end's busy
    time `request_intake` served before the scheduler, the rest added to TTFT; the lag steps of output processed
    while the next step runs) is added as serving_load adds it: at a low rate the front end has no queue, so TTFT
    grows by about the whole request overhead and no more."""
    from dataclasses import replace

    cfg, execution, kv, model = _pair(llama8b, h100, engine, "bf16", 500, 100)
    host = execution.request_overhead()
    whole = host[0].typical if host else 0.0
    busy = execution.request_intake()
    assert model.request_s == pytest.approx(min(busy.typical, whole) if busy is not None else 0.0)
    assert model.request_s <= whole
    assert model.front_s == pytest.approx(lag * model.decode_step_s[0] + whole - model.request_s)
    bare = simulate(replace(model, front_s=0.0, request_s=0.0), 0.5, 500, 100, requests=200, seed=1)
    sim = simulate(model, 0.5, 500, 100, requests=200, seed=1)
    assert sim.ttft.values["p50"] - bare.ttft.values["p50"] == pytest.approx(model.front_s + model.request_s,
                                                                              abs=0.2 * model.decode_step_s[0])
