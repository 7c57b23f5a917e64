"""TensorRT-LLM with no load: a static batch (`--batch N` without --concurrency / --rps, a batch job: tests/plan/test_batch_job_in_process.py) is handed over
at once, so nothing serves it: it is priced as the in-process run (`--engine-opt offline`: decode graphs padded, no
server process), and the trtllm-serve note is printed only where trtllm-serve was priced. Before 1.0 no served
figure was read: the estimate says so, and that `offline` changes nothing there. Sources: data/engines/
tensorrt-llm.yaml (cuda_graph_max_bs.serve, cuda_graph_padding.serve, frontend_per_token_s)."""

import pytest

from sizeup.api import estimate
from sizeup.engines import resolve
from sizeup.engines.base import engine_settings
from sizeup.hardware.catalog import load_catalog

H100 = load_catalog(include_user=False).device("h100-sxm-80gb")
OFFLINE = engine_settings("tensorrt-llm", ("offline",))
RUN = {"device": "h100-sxm-80gb", "engine": "tensorrt-llm", "prompt": 512, "output": 128}


def test_a_static_model_prices_neither_the_served_graphs_nor_the_front_end():
    served, static = resolve("tensorrt-llm", H100), resolve("tensorrt-llm", H100).for_static_batch()
    offline = resolve("tensorrt-llm", H100, settings=OFFLINE)
    assert served.per_op_overhead(True, 65) is None  # trtllm-serve: 65 is no captured size, launched eagerly
    assert static.per_op_overhead(True, 65) == offline.per_op_overhead(True, 65) is not None
    assert static.host_floor(128).typical == pytest.approx(offline.host_floor(128).typical)
    assert static.front_floor(128) is None and served.front_floor(128) is not None
    assert static.request_overhead() is None and static.for_static_batch(False) == served


@pytest.mark.parametrize("batch", [65, 128])
def test_an_estimate_with_no_load_is_priced_as_the_in_process_run(batch):
    plain = estimate("llama-3.1-8b", batch=batch, **RUN)
    bench = estimate("llama-3.1-8b", batch=batch, engine_options=("offline",), **RUN)
    assert plain.decode.latency_s.typical == pytest.approx(bench.decode.latency_s.typical)
    assert not any("priced as trtllm-serve on its defaults" in n for n in plain.assumptions)
    assert any("a batch with no load" in n and "in-process" in n for n in plain.assumptions)


def test_the_served_note_comes_with_a_load_that_priced_it():
    loaded = estimate("llama-3.1-8b", concurrency=65, **RUN)
    assert any("priced as trtllm-serve on its defaults" in n and "streams every token" in n for n in loaded.assumptions)
    assert any("HTTP process streams every running request's token" in n for n in loaded.under_load.assumptions)
    # a sweep's points are static batches, its columns under load a server's
    swept = estimate("llama-3.1-8b", sweep=(65,), **RUN)
    served = estimate("llama-3.1-8b", concurrency=65, **RUN).under_load
    assert swept.sweep_under_load[0].output_tokens_per_s.typical < swept.batch_sweep[0].tokens_per_s.typical
    assert served.output_tokens_per_s.typical > 0


def test_before_1_0_the_served_front_end_is_said_unpriced_and_offline_changes_nothing():
    served = resolve("tensorrt-llm@0.9", H100)
    offline = resolve("tensorrt-llm@0.9", H100, settings=OFFLINE)
    assert not served.served_priced and resolve("tensorrt-llm", H100).served_priced
    assert served.option_notes() == ("tensorrt-llm 0.9 served: its front end (trtllm-serve, Triton's "
                                     "tensorrtllm_backend) is not priced, no per-token or per-request figure read "
                                     "for releases before 1.0",)
    (said,) = offline.option_notes()
    assert said.startswith("--engine-opt offline changes nothing for tensorrt-llm 0.9") and "trtllm-bench" not in said
    assert served.for_static_batch().option_notes() == ()
    plain = estimate("llama-3.1-8b", **{**RUN, "engine": "tensorrt-llm@0.9"}, batch=65)
    bench = estimate("llama-3.1-8b", **{**RUN, "engine": "tensorrt-llm@0.9"}, batch=65, engine_options=("offline",))
    assert plain.decode.latency_s.typical == pytest.approx(bench.decode.latency_s.typical)


@pytest.mark.parametrize("name, offline, cap", [("vllm", True, "max-num-seqs"),
                                                ("sglang", True, "max-running-requests"),
                                                ("tensorrt-llm", False, "max-batch-size")])
def test_the_offline_switch_is_read_once_and_its_rule_is_the_engines(name, offline, cap):
    # base.py reads `offline_frontend` (in_process); `offline` (no arrival process) is in_process unless the engine's
    # in-process entry point takes requests as they come (TensorRT-LLM's LLM API: IN_PROCESS_ARRIVALS)
    run = resolve(name, H100, settings=engine_settings(name, ("offline",)))
    assert run.in_process and run.offline is offline
    assert not resolve(name, H100).in_process and not resolve(name, H100).offline
    assert type(run).BATCH_CAP_OPTION == cap and cap in type(run).ENGINE_OPTIONS
    # the estimate's note says what the switch meant for this engine, its load rule included
    (said,) = [n for n in run.option_notes() if n.startswith("--engine-opt offline:")]
    rule = (f"loaded only with every prompt at once (--concurrency inf, implied by --dataset / --num-prompts, "
            f"--engine-opt {cap}=N caps its batch): no --rps, no --concurrency N" if offline
            else "takes requests as they come (generate_async): --rps and --concurrency N load it")
    assert rule in said
