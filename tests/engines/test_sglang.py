"""SGLang (engines/sglang.py): its defaults as its server_args.py sets them, and TensorRT-LLM's serving defaults."""

import pytest

from sizeup.api import estimate
from sizeup.engines import resolve
from sizeup.engines.base import engine_settings
from sizeup.hardware.catalog import load_catalog

CATALOG = load_catalog()


def test_sglang_defaults_follow_server_args():
    a100 = resolve("sglang@0.3", CATALOG.device("a100-sxm-80gb"))
    assert a100.batching.max_batched_tokens == 8192  # chunked_prefill_size, >= 25,000 MB
    assert a100.batching.chunked_prefill and not a100.batching.mixes  # enable_mixed_chunk off
    assert a100.mem_fraction(1) == 0.88 and a100.mem_fraction(4) == 0.85 and a100.mem_fraction(8) == 0.82  # 0.3.6
    assert resolve("sglang@0.3.0", CATALOG.device("a100-sxm-80gb")).mem_fraction(8) == 0.83  # 0.2.9-0.3.5
    assert resolve("sglang@0.4.0", CATALOG.device("a100-sxm-80gb")).mem_fraction(8) == 0.81
    small = resolve("sglang@0.3", CATALOG.device("rtx-4090"))
    assert small.batching.max_batched_tokens == 2048  # 24 GB: under 25,000 MB


def test_sglang_pool_is_its_static_fraction_less_weights():
    e = estimate("llama-3.1-8b", device="a100-sxm-80gb", engine="sglang@0.3", quant="bf16")
    total = e.memory.weights_bytes + e.memory.kv_cache_bytes
    assert e.memory.max_concurrent_sequences and 0.8 < total / (80 * 2**30) < 0.9


def test_sglang_options_not_priced_are_said():
    e = estimate("llama-3.1-8b", device="a100-sxm-80gb", engine="sglang@0.3", quant="bf16",
                 engine_options=("disable-radix-cache",))
    assert any("radix cache" in a and "nothing priced changes" in a for a in e.assumptions)


def test_tensorrt_llm_runs_an_fp8_checkpoint_with_an_fp8_kv_cache_by_default():
    e = estimate("llama-3.1-8b", device="h100-sxm-80gb", engine="tensorrt-llm", quant="fp8")
    assert e.config.kv_dtype == "fp8" and "kv_cache_quant_algo" in e.defaults["kv_dtype"]
    named = estimate("llama-3.1-8b", device="h100-sxm-80gb", engine="tensorrt-llm", quant="fp8", kv_dtype="fp16")
    assert named.config.kv_dtype == "fp16" and "kv_dtype" not in named.defaults
    assert estimate("llama-3.1-8b", device="h100-sxm-80gb", engine="vllm", quant="fp8").config.kv_dtype == "fp16"
    trt = resolve("tensorrt-llm", CATALOG.device("h100-sxm-80gb")).batching
    assert (trt.max_batched_tokens, trt.max_sequences, trt.mixes) == (8192, 2048, True)  # llm_args.py defaults


def test_vllm_multi_step_divides_the_schedulers_host_time():
    from sizeup.ingest.hf_config import load_model

    h100, arch = CATALOG.device("h100-sxm-80gb"), load_model("llama-3.1-8b")
    one = resolve("vllm@0.6", h100).step_overhead(arch, True)
    ten = resolve("vllm@0.6", h100, settings={"num_scheduler_steps": 10}).step_overhead(arch, True)
    assert abs(ten.typical - one.typical / 10) < 1e-12


def test_decode_batches_above_the_graph_capture_size_launch_eagerly():
    """sglang server_args.py (from 0.5.3): cuda_graph_max_bs 256 at tp < 4 on a GPU of 60-160 GiB, under 35 GiB 16
    (0.5.3-0.5.4) or 24 (0.5.5 on); 0.4.8-0.5.2: 8 under 35 GiB, else the capture list's 160 (256 above 90 GiB);
    0.3/0.4.7: 160, 8 under 25,000 MB. A larger decode batch has no captured graph: the device kind's eager launch."""
    h100 = resolve("sglang@0.5.4", CATALOG.device("h100-sxm-80gb"))
    assert h100.graph_max_batch == 256
    assert h100.per_op_overhead(True, 256).typical == 5.0e-07  # decode_overhead_s: a replayed graph
    assert h100.per_op_overhead(True, 257) is None  # eager: the device kind's launch time
    assert resolve("sglang@0.5.4", CATALOG.device("rtx-4090")).graph_max_batch == 16
    assert resolve("sglang@0.5.5", CATALOG.device("rtx-4090")).graph_max_batch == 24
    assert resolve("sglang@0.5.2", CATALOG.device("rtx-4090")).graph_max_batch == 8
    assert resolve("sglang@0.5.2", CATALOG.device("h100-sxm-80gb")).graph_max_batch == 160
    assert resolve("sglang@0.5.2", CATALOG.device("h200-sxm-141gb")).graph_max_batch == 256
    assert resolve("sglang@0.4", CATALOG.device("rtx-4090")).graph_max_batch == 8
    assert resolve("sglang@0.4", CATALOG.device("a100-sxm-80gb")).graph_max_batch == 160
    own = resolve("sglang@0.5.4", CATALOG.device("h100-sxm-80gb"), settings={"cuda_graph_max_bs": 512})
    assert own.graph_max_batch == 512 and own.per_op_overhead(True, 300) is not None


def test_tensorrt_llm_graph_limit_only_where_stated():
    """trtllm-serve's LLM API default captures decode graphs up to 128 (llm_args.py `config.max_batch_size or 128`),
    the default path; in-process (--engine-opt offline: trtllm-bench, MLPerf) no limit unless the run states one
    (the served capture without padding: tests/engines/test_tensorrt_llm_serve.py)."""
    h100 = CATALOG.device("h100-sxm-80gb")
    assert resolve("tensorrt-llm@1.2", h100).graph_max_batch == 128
    assert resolve("tensorrt-llm@1.2", h100, settings={"offline_frontend": 1}).graph_max_batch is None
    serve = resolve("tensorrt-llm@1.2", h100, settings={"cuda_graph_max_bs": 128})
    assert serve.per_op_overhead(True, 128) is not None and serve.per_op_overhead(True, 129) is None


def test_sglang_05_chunks_prompts_by_gpu_memory_tier():
    """sglang server_args.py (0.5 series): chunked_prefill_size 2048 under 35 GiB, 4096 under 60 GiB (A100 40GB, L40),
    8192 under 160 GiB; 0.3/0.4: 8192 for every GPU of 25,000 MB or more."""
    assert resolve("sglang@0.5.4", CATALOG.device("a100-sxm-40gb")).batching.max_batched_tokens == 4096
    assert resolve("sglang@0.4", CATALOG.device("a100-sxm-40gb")).batching.max_batched_tokens == 8192
    assert resolve("sglang@0.5.4", CATALOG.device("h100-sxm-80gb")).batching.max_batched_tokens == 8192


def test_sglang_05_captures_larger_graphs_at_four_gpus_or_more():
    """sglang server_args.py (0.5 series, _handle_gpu_memory_settings): cuda_graph_max_bs 256 at tp < 4 and 512 at
    tp >= 4 on 60-160 GiB GPUs, 24 / 80 under 35 GiB, 32 / 160 under 60 GiB, 512 above 160 GiB; 0.3/0.4: 160 (8
    under 25,000 MB) whatever the tp size. The workload asks `at_gpus` with the replica's GPU count."""
    h100 = resolve("sglang@0.5.4", CATALOG.device("h100-sxm-80gb"))
    assert h100.at_gpus(2) is h100 and h100.at_gpus(2).graph_max_batch == 256
    assert h100.at_gpus(4).graph_max_batch == 512 and h100.at_gpus(8).graph_max_batch == 512
    assert h100.at_gpus(4).per_op_overhead(True, 400) is not None  # replayed, not eager
    assert h100.at_gpus(4) is h100.at_gpus(4)  # one model per GPU count: its memo of priced phases kept
    assert resolve("sglang@0.5.4", CATALOG.device("rtx-4090")).at_gpus(4).graph_max_batch == 80
    assert resolve("sglang@0.5.4", CATALOG.device("a100-sxm-40gb")).at_gpus(4).graph_max_batch == 160
    assert resolve("sglang@0.5.4", CATALOG.device("b200")).graph_max_batch == 512
    old = resolve("sglang@0.4", CATALOG.device("h100-sxm-80gb"))
    assert old.at_gpus(8) is old and old.at_gpus(8).graph_max_batch == 160
    own = resolve("sglang@0.5.4", CATALOG.device("h100-sxm-80gb"), settings={"cuda_graph_max_bs": 128})
    assert own.at_gpus(8).graph_max_batch == 128  # a run's own --cuda-graph-max-bs is kept


def test_an_estimate_at_four_gpus_prices_decode_under_the_tp4_graph_size():
    """At tp 4 a decode batch of 384 replays a graph (0.5: 512 captured), as --engine-opt cuda-graph-max-bs=512 says;
    with 256 captured it would launch eagerly."""
    run = dict(device="h100-sxm-80gb", gpus=4, engine="sglang@0.5.4", quant="bf16", prompt=512, output=128, batch=384)
    default = estimate("llama-3.1-70b", **run).decode.latency_s.typical
    stated = estimate("llama-3.1-70b", engine_options=("cuda-graph-max-bs=512",), **run).decode.latency_s.typical
    eager = estimate("llama-3.1-70b", engine_options=("cuda-graph-max-bs=256",), **run).decode.latency_s.typical
    assert default == stated and eager > default


def test_sglang_host_time_per_request_is_serial_before_the_overlap_scheduler():
    """sglang PR 1738: the overlap scheduler gains 10% on Llama-3.1-8B ShareGPT at 9,894 output tok/s -> ~10 us of
    host time per running request per step; before 0.4 it runs between GPU steps (added), from 0.4 beside them."""
    from sizeup.workload import host_floor

    a100 = CATALOG.device("a100-sxm-80gb")
    # the scheduler's own: the offline engine (no HTTP process streaming tokens beside it, a test further down)
    old, new = (resolve(v, a100, settings={"offline_frontend": 1}) for v in ("sglang@0.3.0", "sglang@0.5.4"))
    assert old.host_floor(1000).typical == new.host_floor(1000).typical == 1.0e-02
    assert not old.host_overlapped and new.host_overlapped
    steps = type("Steps", (), {"cfg": type("Cfg", (), {"gpus": 1})()})()
    steps.execution = old
    assert host_floor.floored(steps, 1000, 0.03, "typical") == 0.04  # 30 ms GPU + 1000 x 10 us
    steps.execution = new
    assert host_floor.floored(steps, 1000, 0.03, "typical") == 0.03  # hidden behind the GPU step
    assert "run between GPU steps" in host_floor.notes(old)[0]


def test_sglang_03_offline_throughput_pays_its_serial_host_time():
    """0.3 (no overlap scheduler) against 0.4 (the same defaults on one A100, the overlap scheduler on): ~1,400
    running requests x 10 us of host time added to every step (the offline engine: no HTTP process beside it)."""
    run = dict(device="a100-sxm-80gb", engine="sglang@0.3.0", quant="bf16", prompt=227, output=194, offline=True,
               engine_options=("offline",))
    serial = estimate("llama-3.1-8b", **run).under_load.output_tokens_per_s.typical
    later = estimate("llama-3.1-8b", **{**run, "engine": "sglang@0.4"}).under_load.output_tokens_per_s.typical
    assert serial < later * 0.97


def test_sglang_front_end_takes_a_burst_in_at_its_tokenizers_pace():
    """The server process (HTTP + tokenizer manager) is busy per request at least the tokenizer's encode (1.32 ms for
    131 tokens, tt-inference-server #2173) and at most the request's 6.9 ms host latency (#3560), the typical."""
    model = resolve("sglang@0.5.4", CATALOG.device("h100-sxm-80gb"))
    intake, latency = model.request_intake(), model.request_overhead()[0]
    assert (intake.low, intake.typical, intake.high) == (1.3e-03, latency.typical, latency.typical)
    assert intake.low < latency.low


def test_sglang_053_mem_fraction_is_the_gpu_less_server_args_reserve():
    """From 0.5.3 (sglang PRs 10975 / 11076) mem_fraction_static = (gpu_mem - reserved) / gpu_mem, reserved = 512 + 1.5
    x max(chunked_prefill_size, 2048) + 2 x cuda_graph_max_bs + 1024 x tp / 8 MiB, at least 10 GiB above 60 GiB:
    an H100 at tp 1 (chunk 8192, graphs 256) reserves 13,440 MiB; an H200 at tp 8 (graphs 512) 14,848 MiB; a 24 GB
    card (chunk 2048, graphs 16 in 0.5.4) 3,744 MiB. 0.4.7 keeps the figure by tp size (0.4.8-0.5.2: the next test)."""
    h100, h200, small = (CATALOG.device(d) for d in ("h100-sxm-80gb", "h200-sxm-141gb", "rtx-4090"))
    new = resolve("sglang@0.5.4", h100)
    assert new.reserved_mib(1) == 512 + 1.5 * 8192 + 2 * 256 + 1024 / 8
    assert 0.83 < new.mem_fraction(1) < 0.84  # issue 29092 saw 0.828 on an H100 with a later release
    assert resolve("sglang@0.5.4", h200).reserved_mib(8) == 512 + 1.5 * 8192 + 2 * 512 + 1024
    assert resolve("sglang@0.5.4", small).reserved_mib(1) == 512 + 1.5 * 2048 + 2 * 16 + 1024 / 8
    older = resolve("sglang@0.4.7", h100)
    assert older.reserved_mib(1) is None and older.mem_fraction(1) == 0.88 and older.mem_fraction(8) == 0.81
    own = resolve("sglang@0.5.4", h100, settings=engine_settings("sglang", ("mem-fraction-static=0.8",)))
    assert own.mem_fraction(1) == 0.8


def test_a_smaller_static_fraction_holds_fewer_requests_of_a_large_model():
    """Qwen3-32B's bf16 weights leave a small pool on an 80 GB H100: 0.834 of the GPU (0.5.4) holds fewer sequences
    than 0.88 (0.5.2), and the estimate says where the fraction came from."""
    run = dict(device="h100-sxm-80gb", quant="bf16")
    new = estimate("qwen3-32b", engine="sglang@0.5.4", **run)
    old = estimate("qwen3-32b", engine="sglang@0.5.2", **run)
    assert new.memory.max_concurrent_sequences < 0.7 * old.memory.max_concurrent_sequences
    assert any("reserve for activations and CUDA graphs, 13,440 MiB" in a for a in new.assumptions)


def test_sglang_offline_engine_has_no_http_front_end():
    """--engine-opt offline (sglang.Engine / bench_offline_throughput): no intake queue, no per-request latency; the
    served default keeps both."""
    h100 = CATALOG.device("h100-sxm-80gb")
    served = resolve("sglang@0.5.4", h100)
    offline = resolve("sglang@0.5.4", h100, settings=engine_settings("sglang", ("offline",)))
    assert served.request_intake() is not None and served.request_overhead() is not None
    assert offline.offline and offline.request_intake() is None and offline.request_overhead() is None
    assert any("offline engine" in n for n in offline.option_notes())


def test_sglang_reserve_counts_pipeline_ranks_and_the_note_prints_its_own_figures():
    """server_args: reserved_mem += tp_size * pp_size / 8 * 1024 (sglang PR 11076), so pipeline stages add to the
    reserve as tensor-parallel ranks do; the note prints mem_fraction_static as rounded (3 decimals) and the formula
    from the data's terms."""
    from sizeup.ingest.hf_config import load_model
    from sizeup.workload.inference import InferenceConfig, estimate_inference

    h100 = CATALOG.device("h100-sxm-80gb")
    new = resolve("sglang@0.5.4", h100)
    assert new.reserved_mib(2, 2) == 512 + 1.5 * 8192 + 2 * 256 + 1024 * 2 * 2 / 8
    assert new.reserved_mib(2, 2) - new.reserved_mib(2) == 256
    cfg = InferenceConfig(batch=1, prompt=512, output=128, weights="bf16", engine="sglang@0.5.4", gpus=4, pp=2)
    e = estimate_inference(load_model("llama-3.1-70b"), h100, cfg, limits=False)
    note = next(a for a in e.assumptions if "mem_fraction_static" in a)
    fraction = new.mem_fraction(2, 2)
    assert f"mem_fraction_static {fraction:.3f} of the memory free" in note and "13,824 MiB at tp 2, pp 2" in note
    assert "512 + 1.5 x max(chunked-prefill size, 2,048) + 2 x cuda_graph_max_bs + 1,024 x tp x pp / 8" in note


def test_sglang_admission_keeps_room_for_outputs_as_each_release_sets_it():
    h100 = CATALOG.device("h100-sxm-80gb")
    old = resolve("sglang@0.3", h100).load_policy
    assert old.preempts and old.output_reserve is not None
    assert (old.output_reserve.init, old.output_reserve.floor, old.output_reserve.headroom_steps) == (0.7, 0.1, 20)
    new = resolve("sglang@0.5.4", h100).load_policy.output_reserve
    assert (new.init, new.floor, new.decay_steps, new.headroom_steps, new.clip) == (0.7, 0.098, 600, 1, 4096)
    assert resolve("sglang@0.5.1", h100).load_policy.output_reserve.headroom_steps == 20  # 0.5.2 changed it
    # --schedule-conservativeness scales the start from 0.4 (min(0.7 c, 1)) and the floor in every release
    wary = resolve("sglang@0.5.4", h100, settings={"schedule_conservativeness": 1.2}).load_policy.output_reserve
    assert wary.init == pytest.approx(0.84) and wary.floor == pytest.approx(0.1176)
    wary_old = resolve("sglang@0.3", h100, settings={"schedule_conservativeness": 1.2}).load_policy.output_reserve
    assert wary_old.init == 0.7 and wary_old.floor == pytest.approx(0.12)
    # from 0.4 the floor is min(init x 0.14, 1) of the clamped start: at c = 3 the start is 1.0, the floor 0.14
    # (scaling the 0.098 floor by c gave 0.294)
    very = resolve("sglang@0.5.4", h100, settings={"schedule_conservativeness": 3}).load_policy.output_reserve
    assert very.init == 1.0 and very.floor == pytest.approx(0.14)
    # the ratio after a retraction allows SGLANG_RETRACT_DECODE_STEPS (20) a kept request in every release, also from
    # 0.5.2 where the retract loop stops once one decode step fits (headroom_steps 1)
    assert (new.ratio_steps, old.output_reserve.ratio_steps) == (20, 20)


def test_sglang_keeps_room_for_outputs_where_the_pool_is_small():
    # Qwen3-32B bf16 on one H100: a pool of about 20k tokens (63 requests at the mean context of 227 + 97 tokens);
    # 300 requests queued at once are admitted with their whole outputs kept, so fewer run than at the mean context
    from sizeup.ingest.hf_config import load_model
    from sizeup.workload.inference import InferenceConfig
    from sizeup.workload.serving import Load, RequestMix, serving_load

    mix = RequestMix(input_tokens=227, output_tokens=194, output_spread=194)
    load = serving_load(load_model("qwen3-32b"), CATALOG.device("h100-sxm-80gb"),
                        InferenceConfig(weights="bf16", engine="sglang@0.5.5"), mix, Load(num_prompts=300))
    note = next(a for a in load.assumptions if a.startswith("KV admission"))
    assert "whole output" in note and "0.7 x the outputs" in note and "0.098" in note
    assert load.running.typical < 63


def test_sglang_served_iterations_last_at_least_its_http_process_streaming_every_token():
    from sizeup.workload import host_floor

    h100 = CATALOG.device("h100-sxm-80gb")
    served, old = resolve("sglang@0.5.4", h100), resolve("sglang@0.3.0", h100)
    offline = resolve("sglang@0.5.4", h100, settings={"offline_frontend": 1})
    # the TokenizerManager's 119 us per streamed token (derived), apart from the scheduler's 10 us per request
    assert served.front_floor(400).typical == pytest.approx(400 * 1.19e-4)
    assert served.host_floor(400).typical == pytest.approx(400 * 1.0e-5)
    assert offline.front_floor(400) is None  # the offline engine has no HTTP server
    steps = type("Steps", (), {"cfg": type("Cfg", (), {"gpus": 1})()})()
    steps.execution = served
    assert host_floor.floored(steps, 400, 0.01, "typical") == pytest.approx(0.0476)  # 400 x 119 us over 10 ms
    assert host_floor.floored(steps, 400, 0.06, "typical") == 0.06  # hidden behind a longer step
    steps.execution = old  # before 0.4 the scheduler's time adds to the step; the HTTP process still runs beside it
    assert host_floor.floored(steps, 400, 0.01, "typical") == pytest.approx(0.0476)
    assert host_floor.floored(steps, 400, 0.06, "typical") == pytest.approx(0.064)
    assert any("HTTP process streams" in n for n in host_floor.notes(served))
    assert not any("HTTP process" in n for n in host_floor.notes(offline))


def test_sglang_pool_is_its_fraction_of_the_memory_free_at_start_less_the_weights():
    """model_runner.py profile_max_num_token: rest = free after loading - total_gpu_memory x (1 - fraction), where
    total_gpu_memory is what init_torch_distributed found free (the GPU less its CUDA context)."""
    from sizeup.engines.reserve import device_total_bytes
    from sizeup.hardware.usable import usable_memory

    h100 = CATALOG.device("h100-sxm-80gb")
    e = estimate("llama-3.1-8b", device="h100-sxm-80gb", engine="sglang@0.5.4", quant="bf16")
    free = usable_memory(h100).bytes.typical
    fraction = resolve("sglang@0.5.4", h100).mem_fraction(1)
    assert free < device_total_bytes(h100)
    assert e.memory.kv_cache_bytes == pytest.approx(free * fraction - e.memory.weights_bytes, abs=1)


def test_sglang_048_to_052_reserve_a_tier_of_the_gpu_memory_per_parallel_rank():
    """0.4.8-0.5.2 server_args: reserved_mem = (9.5 + tp x pp / 2) GiB under 90 GiB, (12 + tp x pp / 2) GiB under
    160 GiB, (2.8 + tp x pp / 10) GiB under 35 GiB; mem_fraction_static = round((gpu_mem - reserved) / gpu_mem, 3)."""
    from sizeup.engines.reserve import device_total_bytes

    h100, h200, small = (CATALOG.device(d) for d in ("h100-sxm-80gb", "h200-sxm-141gb", "rtx-4090"))
    for release in ("sglang@0.4.8", "sglang@0.5.2"):
        model = resolve(release, h100)
        assert model.reserved_mib(1) == (9.5 + 0.5) * 1024 and model.reserved_mib(4, 2) == (9.5 + 4) * 1024
        mib = device_total_bytes(h100) / 2**20
        assert model.mem_fraction(1) == round((mib - 10 * 1024) / mib, 3)
    assert resolve("sglang@0.5.2", h200).reserved_mib(8) == (12 + 4) * 1024
    assert resolve("sglang@0.5.2", small).reserved_mib(1) == pytest.approx(2.9 * 1024)


def test_sglang_045_to_047_size_the_pool_and_graphs_by_memory_above_80_gib():
    """0.4.5.post3 / 0.4.6 server_args: above 81,920 MiB mem_fraction_static = (gpu_mem - 13 GiB) / gpu_mem and the decode
    graphs captured to 256 (0.4.6: not with DP attention); 0.4.7: 0.88 above 80 GiB, above 96 GiB min(0.88 + 48 GiB x
    0.12 / gpu_mem, (gpu_mem - 18 GiB) / gpu_mem), graphs to 256 above 96 GiB; 0.4.4 and an 80 GB GPU: by tp size, 160."""
    from sizeup.engines.reserve import device_total_bytes

    h100, h200, nvl = (CATALOG.device(d) for d in ("h100-sxm-80gb", "h200-sxm-141gb", "h100-nvl-94gb"))
    mib = device_total_bytes(h200) / 2**20
    assert resolve("sglang@0.4.4", h200).mem_fraction(8) == 0.81
    assert resolve("sglang@0.4.4", h200).at_gpus(8).graph_max_batch == 160
    for release in ("sglang@0.4.5", "sglang@0.4.6"):
        assert resolve(release, h200).mem_fraction(8) == round((mib - 13 * 1024) / mib, 3)
        assert resolve(release, h200).at_gpus(8).graph_max_batch == 256
        assert resolve(release, h100).mem_fraction(8) == 0.81 and resolve(release, h100).graph_max_batch == 160
    assert resolve("sglang@0.4.7", h200).mem_fraction(8) == round(min(0.88 + 48 * 1024 * 0.12 / mib,
                                                                      (mib - 18 * 1024) / mib), 3)
    assert resolve("sglang@0.4.7", nvl).mem_fraction(8) == 0.88 and resolve("sglang@0.4.7", nvl).graph_max_batch == 160
    assert resolve("sglang@0.4.5", nvl).graph_max_batch == 256
    dp = resolve("sglang@0.4.6", h200, settings={"enable_dp_attention": 1}).at_gpus(8)
    assert dp.graph_max_batch == 160
    assert resolve("sglang@0.4.5", h200, settings={"enable_dp_attention": 1}).at_gpus(8).graph_max_batch == 256


def test_sglang_block_fp8_moe_bandwidth_share_by_release():
    # github.com/sgl-project/sglang/pull/11730: SGLang's own fused_moe on H200 (Qwen3-235B FP8 TP8, default config):
    # 16 tokens read 128 x (1 - (120/128)^16) experts of 3 x 4096 x 192 fp8 bytes in 92.36 us, 0.44 of 4.8 TB/s
    experts = 128 * (1 - (120 / 128) ** 16)
    share = experts * 3 * 4096 * 192 / 92.36e-6 / 4.8e12
    assert share == pytest.approx(0.44, abs=0.01)
    h200 = CATALOG.device("h200-sxm-141gb")
    # from 0.4.3 the wheels ship a fused_moe config tuned for DeepSeek's TP8 expert shape on H200 (none for H100)
    for release in ("sglang@0.4.3", "sglang@0.4.5", "sglang@0.5.7"):
        newer = resolve(release, h200).moe_kernel("fp8", False, 64, 2.0)
        assert newer.memory.typical == pytest.approx(0.43) and newer.memory.low == pytest.approx(0.38)
        assert "11730" in newer.source and "h200-sxm-141gb" in newer.basis
    older = resolve("sglang@0.4.1", h200).moe_kernel("fp8", False, 64, 2.0)  # vLLM's Feb 2025 H100 kernel table
    assert older.memory.typical == pytest.approx(0.265) and "13932" in older.source
    h100 = resolve("sglang@0.5.7", CATALOG.device("h100-sxm-80gb")).moe_kernel("fp8", False, 64, 2.0)
    assert h100.memory.typical == pytest.approx(0.265)
    e = estimate("deepseek-r1", device="h200-sxm-141gb", gpus=8, engine="sglang@0.5.7", quant="fp8", batch=64)
    before = estimate("deepseek-r1", device="h200-sxm-141gb", gpus=8, engine="sglang@0.4.1", quant="fp8", batch=64)
    assert e.decode.latency_s.typical < 0.8 * before.decode.latency_s.typical


def test_sglang_nvfp4_experts_on_blackwell_are_flashinfer_trtllm():
    # TensorRT-LLM blog24, TRTLLM-Gen per-rank DeepSeek-V3 TP8 MoE module on one B200: 64 tokens read
    # 256 (1 - (1 - 8/256)^64) experts of 3 x 7168 x 256 x 0.5625 B in 141.68 us, 0.63 of 7.7 TB/s
    share = 256 * (1 - (1 - 8 / 256) ** 64) * 3 * 7168 * 256 * 0.5625 / 141.68e-6 / 7.7e12
    assert share == pytest.approx(0.63, abs=0.01)
    kernel = resolve("sglang@0.5.6", CATALOG.device("b200")).moe_kernel("nvfp4", False, 64, 2.0)
    assert kernel.memory.typical == pytest.approx(0.60) and kernel.memory.high == pytest.approx(0.63)
    assert "blog24" in kernel.source and "server_args" in kernel.source
