"""Throughput under load (workload/serving.py): the steady state of a continuous-batching server priced from the
execution model's batching policy."""

from dataclasses import replace

import pytest

from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model
from sizeup.workload.inference import InferenceConfig
from sizeup.workload.serving import Load, RequestMix, dataset_mix, serving_load

CATALOG = load_catalog()
H100 = CATALOG.device("h100-sxm-80gb")
LLAMA8 = load_model("llama-3.1-8b")


def _serve(engine="tensorrt-llm", load=Load(), mix=RequestMix(input_tokens=1000, output_tokens=1000), **cfg):
    if engine == "tensorrt-llm":  # trtllm-bench's in-process run, as the perf-overview rows (no trtllm-serve front end)
        cfg.setdefault("engine_options", ("offline",))
    config = InferenceConfig(weights=cfg.pop("weights", "fp8"), kv_dtype=cfg.pop("kv", "fp8"), engine=engine, **cfg)
    return serving_load(LLAMA8, H100, config, mix, load)


def test_offline_throughput_sits_below_the_decode_only_figure_and_reports_every_rate():
    s = _serve()
    out, dec = s.output_tokens_per_s.typical, s.decode_only_tokens_per_s.typical
    assert 0 < out < dec  # prompt tokens take part of every step
    assert s.total_tokens_per_s.typical == pytest.approx(out * 2)  # 1000 in + 1000 out per request
    assert s.requests_per_s.typical == pytest.approx(out / 1000)
    assert s.e2e_latency_s.typical == pytest.approx(s.ttft_s.typical + 999 * s.tpot_s.typical)
    assert s.output_tokens_per_s.low <= out <= s.output_tokens_per_s.high


def test_more_concurrency_raises_throughput_and_latency():
    low, high = _serve(load=Load(concurrency=8)), _serve(load=Load(concurrency=128))
    assert high.output_tokens_per_s.typical > 4 * low.output_tokens_per_s.typical
    assert high.tpot_s.typical > low.tpot_s.typical
    assert low.running.typical == 8


def test_a_rate_below_saturation_is_served_at_that_rate_and_one_above_is_saturated():
    light = _serve(load=Load(rate=1.0))
    assert light.requests_per_s.typical == pytest.approx(1.0) and not light.saturated
    assert light.utilization < 0.2
    heavy = _serve(load=Load(rate=1e5))
    assert heavy.saturated and heavy.requests_per_s.typical < 1e5
    assert heavy.output_tokens_per_s.typical == pytest.approx(_serve().output_tokens_per_s.typical)


def test_replicas_sum_throughput_and_keep_per_request_latency():
    one, four = _serve(load=Load(concurrency=64)), _serve(load=Load(concurrency=256, replicas=4))
    assert four.output_tokens_per_s.typical == pytest.approx(4 * one.output_tokens_per_s.typical)
    assert four.tpot_s.typical == pytest.approx(one.tpot_s.typical)


def test_prefill_steps_apart_cost_more_than_mixed_steps():
    # vLLM V0 runs prompts in steps of their own; V1 rides them in the decode steps (same device, format, load)
    mix = RequestMix(input_tokens=2000, output_tokens=200)
    v0 = _serve("vllm@0.6", load=Load(concurrency=64), mix=mix, weights="bf16", kv="fp16")
    v1 = _serve("vllm@0.8", load=Load(concurrency=64), mix=mix, weights="bf16", kv="fp16")
    assert "prefill steps apart" in v0.policy and "mixed steps" in v1.policy
    assert v1.output_tokens_per_s.typical > v0.output_tokens_per_s.typical


def test_static_batching_runs_to_the_longest_output_of_a_batch():
    mix = RequestMix(input_tokens=256, output_tokens=128)
    plain = _serve("hf", load=Load(concurrency=16), mix=mix, weights="bf16", kv="fp16")
    spread = _serve("hf", load=Load(concurrency=16), mix=RequestMix(input_tokens=256, output_tokens=128,
                                                                     output_spread=64), weights="bf16", kv="fp16")
    assert plain.policy == "static" and spread.output_tokens_per_s.typical < plain.output_tokens_per_s.typical
    with pytest.raises(ConfigError, match="statically"):
        _serve("hf", load=Load(rate=2.0), mix=mix, weights="bf16", kv="fp16")


def test_named_datasets_give_sourced_means_and_explicit_lengths_win():
    mix = dataset_mix("sharegpt")
    assert (mix.input_tokens, mix.output_tokens) == (227, 194)  # sglang #1639 and benchmark_vllm_060 README
    assert dataset_mix("mlperf-llama2-openorca", input_tokens=300).input_tokens == 300
    # per-sample token lengths of the official pickles, published as CSV by Harshith-umesh/mlperf-dashboard @5a43d27
    assert dataset_mix("mlperf-llama2-openorca").input_tokens == 222
    assert dataset_mix("mlperf-mixtral-15k").input_tokens == 427
    assert not any("not published" in n for n in dataset_mix("mlperf-llama2-openorca").notes)
    assert any("not published" in n for n in dataset_mix("mlperf-gptj-cnndm").notes)
    with pytest.raises(ConfigError, match="expected one of"):
        dataset_mix("nope")


@pytest.mark.parametrize("load", [dict(concurrency=0), dict(rate=-1.0), dict(concurrency=4, rate=1.0),
                                  dict(replicas=0)])
def test_bad_loads_are_one_line_errors(load):
    with pytest.raises(ConfigError) as e:
        Load(**load)
    assert "\n" not in str(e.value)


def test_poisson_load_obeys_littles_law_and_grows_the_batch_and_tpot_toward_saturation():
    # processor sharing at a state-dependent rate: mean running = rate x time running (Little), TPOT = that / (rate O)
    x_max = _serve().requests_per_s.typical
    rows = [_serve(load=Load(rate=f * x_max)) for f in (0.2, 0.6, 0.95)]
    for f, s in zip((0.2, 0.6, 0.95), rows):
        assert not s.saturated and s.requests_per_s.typical == pytest.approx(f * x_max)
        assert s.tpot_s.typical == pytest.approx(s.running.typical / (f * x_max * 1000), rel=1e-6)
        assert s.e2e_latency_s.typical == pytest.approx(s.ttft_s.typical + 999 * s.tpot_s.typical)
    assert rows[0].running.typical < rows[1].running.typical < rows[2].running.typical
    assert rows[0].tpot_s.typical < rows[1].tpot_s.typical < rows[2].tpot_s.typical


def test_a_step_carries_the_prompts_that_arrive_during_the_whole_step():
    # prompts in steps of their own (vLLM V0): at rate r a step of decode time d carries r x I x t prompt tokens
    # where t is the whole step, so t = d + prefill(r I t) > d + prefill(r I d)
    from sizeup.workload import serving

    mix = RequestMix(input_tokens=2000, output_tokens=200)
    config = InferenceConfig(weights="bf16", kv_dtype="fp16", engine="vllm@0.6")
    model = serving.execution_for(H100, config)
    steps = serving._Steps(LLAMA8, H100, config, model, mix)
    d = steps.decode(32, "typical")
    t = serving._loaded_step(steps, model.batching, 32, 10.0 * 2000, "typical")
    assert t == pytest.approx(d + steps.prefill(10.0 * 2000 * t, "typical"), rel=1e-3)
    assert t > d + steps.prefill(10.0 * 2000 * d, "typical")


def test_beam_search_decodes_every_beam_and_shares_the_prompt_cache():
    plain = RequestMix(input_tokens=1000, output_tokens=100)
    beams = RequestMix(input_tokens=1000, output_tokens=100, beams=4)
    one, four = _serve(load=Load(concurrency=32), mix=plain), _serve(load=Load(concurrency=32), mix=beams)
    assert four.tpot_s.typical > one.tpot_s.typical  # 128 sequences a step instead of 32
    assert four.output_tokens_per_s.typical < one.output_tokens_per_s.typical
    # the KV pool holds a request's prompt once: 8000 + 4 x 50 tokens, not 4 x 8050 (vLLM V0: the pool binds)
    long1, long4 = (RequestMix(input_tokens=8000, output_tokens=100, beams=w) for w in (1, 4))
    off1, off4 = (_serve("vllm@0.6", mix=m, weights="bf16", kv="fp16") for m in (long1, long4))
    assert off1.capacity < 256 and off4.capacity == pytest.approx(off1.capacity * 8050 / 8200, abs=1)
    assert dataset_mix("mlperf-gptj-cnndm").beams == 4 and dataset_mix("sharegpt").beams == 1
    with pytest.raises(ConfigError, match="beam width 0"):
        RequestMix(input_tokens=10, output_tokens=10, beams=0)


def test_one_slot_queues_as_m_m_1():
    # with room for one request the chain is M/M/1 (processor sharing of one): wait in queue rho / (mu (1 - rho))
    mix = RequestMix(input_tokens=500, output_tokens=200)
    config = InferenceConfig(weights="fp8", kv_dtype="fp8", engine="tensorrt-llm", engine_options=("max-batch-size=1",))
    mu = serving_load(LLAMA8, H100, config, mix, Load()).requests_per_s.typical
    light = serving_load(LLAMA8, H100, config, mix, Load(rate=1e-3 * mu))
    busy = serving_load(LLAMA8, H100, config, mix, Load(rate=0.8 * mu))
    assert busy.capacity == 1 and busy.running.typical == pytest.approx(0.8, rel=0.02)  # P(busy) = rho
    wait = busy.ttft_s.typical - light.ttft_s.typical
    assert wait == pytest.approx(0.8 / (mu * 0.2), rel=0.05)


def test_an_engine_that_reserves_a_whole_output_holds_fewer_requests():
    # TensorRT-LLM's default GUARANTEED_NO_EVICT (data/engines/tensorrt-llm.yaml kv_reserve_to_completion): the
    # pool holds I + O tokens a request; vLLM takes pages as tokens come (I + O / 2 on average)
    from sizeup.workload import serving

    config = InferenceConfig(weights="fp8", kv_dtype="fp8", engine="tensorrt-llm")
    model = serving.execution_for(H100, config)
    assert model.load_policy.reserve_to_completion and not model.batching.reserve_to_completion
    mix = RequestMix(input_tokens=2000, output_tokens=2000)
    held, _, _ = serving._capacity(LLAMA8, H100, config, model, model.load_policy, mix, None)
    paged, _, _ = serving._capacity(LLAMA8, H100, config, model, model.batching, mix, None)
    assert held == pytest.approx(paged * 3000 / 4000, abs=1)
    vllm = serving.execution_for(H100, InferenceConfig(weights="bf16", kv_dtype="fp16", engine="vllm"))
    assert not vllm.load_policy.reserve_to_completion
    # an engine cap below what the pool holds at I + O binds as it is: not scaled down with the pool's fit
    capped = replace(config, engine_options=("max-batch-size=64",))
    cmodel = serving.execution_for(H100, capped)
    short = RequestMix(input_tokens=200, output_tokens=300)
    fit, _, _ = serving._capacity(LLAMA8, H100, config, model, model.load_policy, short, None)
    cap, _, why = serving._capacity(LLAMA8, H100, capped, cmodel, cmodel.load_policy, short, None)
    assert fit > 64 and cap == 64 and "max_sequences" in why


def test_ttft_adds_the_engines_request_host_time_and_its_output_lag(monkeypatch):
    # a request's TTFT = host time outside the GPU steps + lag steps + half a step's admission wait + its prefill
    from sizeup.engines.base import ExecutionModel
    from sizeup.workload import serving

    mix, light = RequestMix(input_tokens=200, output_tokens=200), Load(rate=0.5)
    config = InferenceConfig(weights="bf16", kv_dtype="fp16", engine="vllm")
    model = serving.execution_for(H100, config)
    with_host = serving_load(LLAMA8, H100, config, mix, light, execution=model)
    assert any("takes 12 ms" in a and "one request after another" in a for a in with_host.assumptions)
    monkeypatch.setattr(ExecutionModel, "request_overhead", lambda self: None)
    bare = serving_load(LLAMA8, H100, config, mix, light, execution=model)
    busy = 0.0033  # the front end's busy time per request (vllm.yaml request_intake_s), its queue's service time
    queue = 0.5 * busy * busy / (2 * (1 - 0.5 * busy))  # M/D/1 wait at the front end, 0.2 % busy
    assert with_host.ttft_s.typical - bare.ttft_s.typical == pytest.approx(0.012 + queue, abs=1e-6)
    policy = model.load_policy
    monkeypatch.setattr(type(model), "load_policy", property(lambda self: replace(policy, first_token_lag_steps=1)))
    lagged = serving_load(LLAMA8, H100, config, mix, light, execution=model)
    step = lagged.ttft_s.typical - bare.ttft_s.typical  # one step of the light running batch, ~TPOT
    assert step == pytest.approx(bare.tpot_s.typical, rel=0.25)


def test_a_mixed_step_is_one_gemm_at_the_summed_rows():
    # a mixed step runs one GEMM per weight matrix over its decodes and prompt tokens: the weights are read once, so
    # the prompt tokens add max(R, (b + p) c) - max(R, b c) to the decode step (R one token's weight read, c a
    # token's compute), beside the ridge-point excess: hidden in the read while the step stays memory-bound, their
    # whole compute once the decodes are compute-bound. (H100 FP8: the kernel does not change with the rows.)
    from sizeup.workload import serving as srv
    from sizeup.workload.inference import execution_for

    config = InferenceConfig(weights="fp8", kv_dtype="fp8", engine="tensorrt-llm", engine_options=("offline",))
    steps = srv._Steps(LLAMA8, H100, config, execution_for(H100, config), RequestMix(input_tokens=256,
                                                                                     output_tokens=256))
    policy = steps.execution.load_policy
    read, c = steps.read("typical"), steps.per_token("typical")
    assert steps.gemm_rows(True, 4, 4 + 256) is None  # the same kernel at 260 rows: no estimate of its own
    for decodes, prompt in ((4, 256), (8, 2048), (int(4 * read / c), 2048)):
        extra = srv._step(steps, policy, decodes, prompt, "typical")[1]
        one_gemm = max(read, (decodes + prompt) * c) - max(read, decodes * c)
        lump = min(256, policy.max_batched_tokens - decodes)
        assert extra == pytest.approx(one_gemm + steps.streaming(decodes, "typical", prompt, lump))
    # a prompt riding in a memory-bound step pays no second read of the weights: less than its own prefill
    assert srv._step(steps, policy, 4, 256, "typical")[1] < 0.5 * steps.at(1).prefill.latency_s.typical


def test_a_mixed_steps_decodes_run_the_kernel_of_the_step_rows():
    # TensorRT-LLM's NVFP4 GEMM reaches its FP4-peak fraction from 2,048 rows (fp4_gemm_min_tokens): 1,283 decodes
    # alone run below it, but with 1,283 prompt tokens in the same step the GEMMs have 2,566 rows, so the decodes'
    # share of the step runs the FP4 GEMM too, and so do the prompt tokens
    from sizeup.workload import serving as srv
    from sizeup.workload.inference import execution_for

    device, arch = CATALOG.device("rtx-pro-6000-server"), load_model("llama-3.3-70b")
    config = InferenceConfig(weights="nvfp4", kv_dtype="fp8", engine="tensorrt-llm", engine_options=("offline",))
    steps = srv._Steps(arch, device, config, execution_for(device, config), RequestMix(input_tokens=128,
                                                                                      output_tokens=128))
    policy = steps.execution.load_policy
    assert steps.gemm_rows(True, 1283, 2566) == 2048  # down to a power of 2^(1/2)
    alone, shared = steps.sequences(1283, "typical"), steps.sequences(1283, "typical", 2566)
    assert shared < 0.75 * alone
    c = steps.per_token("typical", 2566)
    assert c == pytest.approx(steps.per_token("typical"), rel=0.05)  # a large prefill's kernel: the same GEMM
    extra = srv._step(steps, policy, 1283, 1283, "typical")[1]
    assert 1283 * c > steps.read("typical")  # compute-bound: the prompt tokens pay their whole compute
    assert extra == pytest.approx(shared - alone + 1283 * c + steps.streaming(1283, "typical", 1283, 128))


def test_a_step_near_the_ridge_point_pays_its_partial_overlap():
    # a decode step of B sequences costs max(weight read, compute) per op in the roofline; where the compute is about
    # the read it pays more (price/streaming.py's measured curve), at batch 1 next to nothing
    from sizeup.price import streaming
    from sizeup.workload import serving as srv
    from sizeup.workload.inference import execution_for

    config = InferenceConfig(weights="fp8", kv_dtype="fp8", engine="tensorrt-llm", engine_options=("offline",))
    steps = srv._Steps(LLAMA8, H100, config, execution_for(H100, config), RequestMix(input_tokens=256,
                                                                                     output_tokens=256))
    single, per_token = steps.sequences(1, "typical"), steps.per_token("typical")
    # R: the weights at H100's bandwidth x the GPU kind's typical memory efficiency, at most the single step
    read = streaming.weight_read(H100, steps.at(1).memory.weights_bytes, LLAMA8, single)
    assert read == pytest.approx(min(single, steps.at(1).memory.weights_bytes / (H100.memory_bandwidth_bytes_per_s
                                                                               * 0.85)))
    ridge = round(2 * read / per_token)  # the batch whose compute is two weight reads
    assert steps.streaming(ridge, "typical") == pytest.approx(streaming.excess(read, ridge * per_token, "typical"))
    assert steps.streaming(ridge, "typical") > 0.3 * read
    assert steps.decode(ridge, "typical") - steps.sequences(ridge, "typical") == pytest.approx(
        steps.streaming(ridge, "typical"))
    assert steps.streaming(1, "typical") < 2e-3 * single
    assert steps.streaming(ridge, "low") < steps.streaming(ridge, "typical") < steps.streaming(ridge, "high")


def test_a_poisson_arrival_waits_half_a_loaded_step_then_rides_a_whole_one():
    # mixed steps, no chunking: an arrival lands mid-step (half a step's wait), then its prompt rides the next step
    # with the prompts of every other request that arrived meanwhile (Poisson: rate x input x step of them), so its
    # first token comes at least 1.5 loaded steps (TPOT) after it arrives
    mix = RequestMix(input_tokens=1000, output_tokens=300)
    x_max = _serve(mix=mix).requests_per_s.typical
    s = _serve(load=Load(rate=0.97 * x_max), mix=mix)
    assert s.ttft_s.typical >= 1.5 * s.tpot_s.typical


def test_a_closed_loop_first_step_carries_the_replacing_prompts():
    # at concurrency B each step admits the B x I / O prompt tokens of the requests replacing those that finished;
    # the step that computes a request's prompt carries them too (mixed steps), as the Poisson path's arrivals
    from sizeup.workload import serving as srv
    from sizeup.workload.inference import execution_for

    config = InferenceConfig(weights="fp8", kv_dtype="fp8", engine="tensorrt-llm", engine_options=("offline",))
    mix = RequestMix(input_tokens=1000, output_tokens=100, input_spread=300.0)
    steps = srv._Steps(LLAMA8, H100, config, execution_for(H100, config), mix)
    policy = steps.execution.load_policy
    assert policy.mixes
    est = serving_load(LLAMA8, H100, config, mix, Load(concurrency=64))
    step = srv._step(steps, policy, 64, 64 * 1000 / 100, "typical")[0]
    budget = policy.max_batched_tokens - 64
    own = srv._step(steps, policy, 64, min(1000 + 64 * 1000 / 100, budget), "typical")[0]
    alone = srv._step(steps, policy, 64, 1000, "typical")[0]
    front = srv.runs.front(steps.execution, policy, step, "typical", 64)  # 64 running: the step formed ahead
    assert est.ttft_s.typical == pytest.approx(front + step / 2 + own, rel=1e-6)
    assert own > alone
