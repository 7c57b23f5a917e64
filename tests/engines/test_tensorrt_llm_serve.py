"""TensorRT-LLM's entry points under load: `trtllm-serve` on its defaults (the default: the LLM API's decode graphs
without padding, the server process's per-token front end and per-request time) against the in-process runs
(`--engine-opt offline`: trtllm-bench, an MLPerf harness). Sources: data/engines/tensorrt-llm.yaml
(cuda_graph_max_bs.serve, cuda_graph_padding.serve, frontend_per_token_s, request_overhead_s)."""

import pytest

from sizeup.api import estimate
from sizeup.engines import resolve
from sizeup.engines.base import engine_settings
from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.workload import host_floor

H100 = load_catalog(include_user=False).device("h100-sxm-80gb")
OFFLINE = engine_settings("tensorrt-llm", ("offline",))


def test_offline_is_the_same_switch_as_vllms():
    assert OFFLINE == engine_settings("vllm", ("offline",)) == {"offline_frontend": 1.0}
    with pytest.raises(ConfigError, match="switch"):
        engine_settings("tensorrt-llm", ("offline=2",))


@pytest.mark.parametrize("batch, replayed", [(1, True), (31, True), (32, True), (33, False), (48, False),
                                             (64, True), (100, False), (128, True), (256, False)])
def test_trtllm_serve_replays_only_the_llm_apis_captured_sizes(batch, replayed):
    # llm_args.py: capture 1-31, 32, 64, 128 (max_batch_size 0 -> 128), enable_padding False -> exact sizes only
    served = resolve("tensorrt-llm", H100)
    assert (served.per_op_overhead(True, batch) is not None) is replayed


def test_in_process_runs_and_a_stated_limit_replay_padded_graphs():
    offline = resolve("tensorrt-llm", H100, settings=OFFLINE)
    assert offline.graph_max_batch is None and offline.per_op_overhead(True, 100) is not None
    stated = resolve("tensorrt-llm", H100, settings={"cuda_graph_max_bs": 256.0})
    assert stated.per_op_overhead(True, 200) is not None and stated.per_op_overhead(True, 300) is None
    # releases 0.5-0.21 ran TensorRT engines: their enqueue cost at every batch, no served capture rule
    assert resolve("tensorrt-llm@0.12", H100).per_op_overhead(True, 100) is not None


def test_the_server_process_floors_an_iteration_at_its_per_token_time():
    served, offline = resolve("tensorrt-llm", H100), resolve("tensorrt-llm", H100, settings=OFFLINE)
    # frontend_per_token_s typical 119 us (vLLM's API-server share: 140 - 21.5 us) against the executor's 29 us
    assert served.front_floor(256).typical == pytest.approx(256 * 119e-6)
    assert served.host_floor(256).typical == offline.host_floor(256).typical == pytest.approx(256 * 29e-6)
    assert offline.front_floor(256) is None  # no server process in-process
    # the iteration lasts at least the larger of the two processes' times (workload/host_floor.py)
    assert host_floor.raised(served, 256, 1, 1e-3, "typical") == pytest.approx(256 * 119e-6)
    assert host_floor.raised(offline, 256, 1, 1e-3, "typical") == pytest.approx(256 * 29e-6)
    # attention DP splits the executor's loop over the ranks, not the one server process
    dp = resolve("tensorrt-llm", H100, settings={"enable_attention_dp": 1.0})
    assert dp.host_floor(800, 8).typical == pytest.approx(100 * 29e-6)
    assert dp.front_floor(800).typical == pytest.approx(800 * 119e-6)
    assert resolve("tensorrt-llm", H100, settings={**OFFLINE, "enable_attention_dp": 1.0}).host_floor(
        800, 8).typical == pytest.approx(100 * 29e-6)


def test_the_server_has_a_per_request_time_the_in_process_run_has_not():
    served, offline = resolve("tensorrt-llm", H100), resolve("tensorrt-llm", H100, settings=OFFLINE)
    overhead, said = served.request_overhead()
    # run-benchmark-with-trtllm-serve.md example: one request, TTFT 12.83 ms (high: prefill taken as nothing)
    assert overhead.high == pytest.approx(12.8e-3) and overhead.low < overhead.typical < overhead.high
    assert "--engine-opt offline" in said and served.request_intake() == overhead
    assert offline.request_overhead() is None and offline.request_intake() is None
    assert any("trtllm-serve" in n for n in served.option_notes())
    assert any("in-process" in n for n in offline.option_notes())


def test_an_in_process_run_still_takes_a_request_rate():
    # the LLM API takes requests as they come (MLPerf Server through its harness): --rps is not refused
    assert not resolve("tensorrt-llm", H100, settings=OFFLINE).offline
    run = estimate("llama-3.1-8b", device="h100-sxm-80gb", engine="tensorrt-llm", quant="fp8", rps=10.0,
                   dataset="sharegpt", engine_options=("offline",))
    assert run.under_load.output_tokens_per_s.typical > 0


def test_a_served_burst_of_a_small_moe_is_capped_by_the_server_not_the_gpu():
    kwargs = {"device": "h100-sxm-80gb", "engine": "tensorrt-llm@1.2", "quant": "mxfp4", "dataset": "sharegpt",
              "num_prompts": 1000, "offline": True}
    served = estimate("gpt-oss-20b", **kwargs)
    bench = estimate("gpt-oss-20b", engine_options=("offline",), **kwargs)
    def out(e):
        return e.under_load.output_tokens_per_s.typical

    assert out(served) < 1 / 107e-6  # one process streaming every token: at most 1 / its per-token time
    assert out(bench) > 1.5 * out(served)
    assert served.under_load.ttft_s.typical > bench.under_load.ttft_s.typical


def test_postprocess_workers_share_the_per_token_time_the_executor_still_floors():
    # serve.py --num_postprocess_workers default 0; openai_server.py: with workers the main process yields their
    # finished _postprocess_result (detokenized OpenAI chunks) and runs no post_processor of its own
    assert engine_settings("tensorrt-llm", ("num-postprocess-workers=4",)) == {"num_postprocess_workers": 4.0}
    served = resolve("tensorrt-llm", H100)
    four = resolve("tensorrt-llm", H100, settings={"num_postprocess_workers": 4.0})
    assert served.postprocess_workers == 1 and four.postprocess_workers == 4
    assert four.front_floor(256).typical == pytest.approx(256 * 119e-6 / 4)
    assert host_floor.raised(four, 256, 1, 1e-3, "typical") == pytest.approx(256 * 119e-6 / 4)
    # eight workers: 15 us a request's token, under the executor's own 29 us, which then floors the iteration
    eight = resolve("tensorrt-llm", H100, settings={"num_postprocess_workers": 8.0})
    assert host_floor.raised(eight, 256, 1, 1e-3, "typical") == pytest.approx(256 * 29e-6)
    assert any("4 postprocess workers" in n and "relay" in n for n in four.option_notes())
    # an in-process run has no server: the workers change nothing
    offline = resolve("tensorrt-llm", H100, settings={**OFFLINE, "num_postprocess_workers": 4.0})
    assert offline.host_floor(256).typical == pytest.approx(256 * 29e-6) and offline.front_floor(256) is None


def test_with_postprocess_workers_the_intake_process_does_not_stream():
    """workload/front_process.py queues streaming with intake only where one process does both: trtllm-serve's main
    process by default; with workers it takes requests in while they stream (serving_runs.streaming 0)."""
    from sizeup.workload.serving_runs import streaming
    served = resolve("tensorrt-llm", H100)
    four = resolve("tensorrt-llm", H100, settings={"num_postprocess_workers": 4.0})
    assert served.front_streams and streaming(served, "typical") == pytest.approx(119e-6)
    assert not four.front_streams and streaming(four, "typical") == 0.0


def test_postprocess_workers_lift_a_served_burst_capped_by_the_server():
    kwargs = {"device": "h100-sxm-80gb", "engine": "tensorrt-llm@1.2", "quant": "mxfp4", "dataset": "sharegpt",
              "num_prompts": 1000, "offline": True}
    served = estimate("gpt-oss-20b", **kwargs).under_load.output_tokens_per_s.typical
    workers = estimate("gpt-oss-20b", engine_options=("num-postprocess-workers=4",),
                       **kwargs).under_load.output_tokens_per_s.typical
    assert workers > served
