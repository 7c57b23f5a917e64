"""The engine's per-request host time as a floor under a step (workload/host_floor.py)."""

from __future__ import annotations

import pytest

from sizeup.engines.base import ExecutionModel
from sizeup.hardware.catalog import load_catalog
from sizeup.ranges import Range
from sizeup.workload import host_floor


class _Engine:
    label = "stub 1.0"
    host_overlapped = True

    def __init__(self, per: Range | None, front: Range | None = None):
        self.per, self.front = per, front

    def host_floor(self, requests: float, gpus: int = 1) -> Range | None:
        return None if self.per is None else self.per.scale(requests)

    def front_floor(self, requests: float) -> Range | None:
        return None if self.front is None else self.front.scale(requests)


class _Steps:
    def __init__(self, engine, gpus: int = 1):
        self.execution = engine
        self.cfg = type("Cfg", (), {"gpus": gpus})()


def test_floor_raises_a_short_step_to_the_host_time_and_leaves_a_long_one():
    steps = _Steps(_Engine(Range(1e-5, 2e-5, 4e-5)))
    assert host_floor.floored(steps, 1000, 0.005, "typical") == pytest.approx(0.02)  # 1000 x 20 us
    assert host_floor.floored(steps, 1000, 0.05, "typical") == 0.05
    assert host_floor.floored(steps, 1000, 0.005, "high") == pytest.approx(0.04)


def test_a_process_beside_the_scheduler_is_a_floor_whether_or_not_the_host_work_overlaps():
    # scheduler 10 us per request, HTTP process 50 us per request: max(step (+ scheduler), 1000 x 50 us)
    overlapped = _Engine(Range(1e-5, 1e-5, 1e-5), Range(5e-5, 5e-5, 5e-5))
    assert host_floor.floored(_Steps(overlapped), 1000, 0.005, "typical") == pytest.approx(0.05)
    assert host_floor.floored(_Steps(overlapped), 1000, 0.08, "typical") == 0.08
    serial = _Engine(Range(1e-5, 1e-5, 1e-5), Range(5e-5, 5e-5, 5e-5))
    serial.host_overlapped = False
    assert host_floor.floored(_Steps(serial), 1000, 0.005, "typical") == pytest.approx(0.05)
    assert host_floor.floored(_Steps(serial), 1000, 0.045, "typical") == pytest.approx(0.055)  # 45 ms + 10 ms
    assert any("HTTP process" in n for n in host_floor.notes(overlapped))


def test_no_figure_or_no_engine_prices_the_step_as_before():
    assert host_floor.floored(_Steps(_Engine(None)), 4096, 0.003, "typical") == 0.003
    assert host_floor.floored(_Steps(None), 4096, 0.003, "typical") == 0.003
    assert host_floor.notes(_Engine(None)) == ()
    assert "20 µs each" in host_floor.notes(_Engine(Range(1e-5, 2e-5, 4e-5)))[0]


def _model(engine: str, device: str = "b200", **settings: float) -> ExecutionModel:
    from sizeup.engines.base import resolve

    return resolve(engine, load_catalog().device(device), settings=settings or None)


def test_tensorrt_llm_states_its_sourced_per_request_host_time():
    # TensorRT-LLM PR 10273: 45.11 ms host_step_time per iteration at max_batch_size 1536 -> ~29 us a request (the
    # executor in-process: --engine-opt offline; trtllm-serve's front end is tests/engines/test_tensorrt_llm_serve.py)
    floor = _model("tensorrt-llm", offline_frontend=1).host_floor(1536)
    assert floor.typical == pytest.approx(0.0445, rel=0.02)


def test_attention_data_parallel_splits_the_requests_over_the_ranks_loops():
    one_loop = _model("tensorrt-llm", offline_frontend=1).host_floor(1536, 8)
    split = _model("tensorrt-llm", enable_attention_dp=1, offline_frontend=1)
    assert split.host_floor(1536, 8).typical == pytest.approx(one_loop.typical / 8)
    assert "each of the 8 GPUs' loops" in host_floor.notes(split, 8)[0]
    assert "GPUs' loops" not in host_floor.notes(_model("tensorrt-llm", offline_frontend=1), 8)[0]


def test_vllm_floor_only_for_the_v1_engine():
    assert _model("vllm@0.10").host_floor(100) is not None
    assert _model("vllm@0.6.0").host_floor(100) is None  # V0 prices its host time whole in step_overhead_s


def test_moe_at_large_batch_is_capped_by_the_host_not_the_gpu():
    """Qwen3-30B-A3B NVFP4 on one B200 is a cheap GPU step at batch ~1500: its throughput under load is the host's
    1 / per-request time (~34k output tok/s at 29 us), not the GPU's (~70k before the floor)."""
    from sizeup.api.inference import estimate

    res = estimate("qwen3-30b-a3b", device="b200", engine="tensorrt-llm", quant="nvfp4", kv_dtype="fp8",
                   prompt=128, output=128, offline=True, engine_options=("offline",))  # trtllm-bench
    out = res.under_load.output_tokens_per_s.typical
    assert out == pytest.approx(1 / 29e-6, rel=0.05)
    assert any("host time per iteration" in a for a in res.under_load.assumptions)
