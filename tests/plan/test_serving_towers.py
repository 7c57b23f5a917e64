"""The serving planner prices an encoder-decoder's decode and memory as `estimate` does: T5's cross-attention
over the scenario's prompt (its encoder length), its self-attention cache over the decoder's own tokens, the
tower's activations in the memory peak."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from sizeup.engines import resolve
from sizeup.ingest.families.registry import parse_config
from sizeup.plan.scenario import parse_scenario
from sizeup.plan.serving import _p95_memory, replica_model
from sizeup.workload.inference import InferenceConfig, estimate_inference

CONFIGS = Path(__file__).parents[1] / "ingest" / "configs"


def _arch(name: str):
    return parse_config(json.loads((CONFIGS / f"{name}.json").read_text()), name)


T5, LLAVA = _arch("flan-t5-xl"), _arch("llava-1.5-7b-hf")


@pytest.mark.parametrize("prompt", [64, 400])
@pytest.mark.parametrize("engine", ["hf", "vllm"])
def test_t5_decode_step_matches_estimate_at_the_scenarios_prompt(h100, prompt, engine):
    cfg = InferenceConfig(prompt=prompt, output=64, engine=engine)
    model = replica_model(T5, h100, cfg, max_batch=64)
    for batch in (1, 64):  # at batch 64 the step is no longer overhead-bound: the cache reads show
        e = estimate_inference(T5, h100, replace(cfg, batch=batch), limits=False)
        assert e.arch.cross_source == prompt
        # the GPU step: the estimate's in-process decode has no served host time, which the planner's served steps
        # add on top (host_s, workload/host_floor.py raised)
        step = model.gpu_step_s[model.decode_batches.index(batch)]
        assert step == pytest.approx(e.decode.latency_s.typical, rel=1e-9)


def test_t5_decode_grows_with_the_prompt_its_decoder_cross_attends_to(h100):
    short = replica_model(T5, h100, InferenceConfig(prompt=64, output=64), max_batch=64)
    long = replica_model(T5, h100, InferenceConfig(prompt=480, output=64), max_batch=64)
    assert all(a <= b for a, b in zip(short.decode_step_s, long.decode_step_s))
    assert short.decode_step_s[-1] < long.decode_step_s[-1]  # at batch 64 the cross-attention K/V reads show


def _traffic(**keys):
    return parse_scenario({"name": "s", "model": "llama-3.1-8b", "task": "api",
                           "traffic": {"peak_requests_per_s": 1, **keys}}).traffic


@pytest.mark.parametrize("engine", ["hf", "vllm"])
def test_t5_plan_memory_matches_estimate_at_the_p95_lengths(h100, engine):
    t = _traffic(prompt_tokens=300, output_tokens=50)
    m = _p95_memory(T5, resolve(engine, h100), "bf16", 1, t)
    e = estimate_inference(T5, h100, InferenceConfig(prompt=t.prompt_p95_tokens, output=t.output_p95_tokens,
                                                     engine=engine), limits=False)
    assert m.kv_cache_needed_bytes == e.memory.kv_cache_needed_bytes
    per_token = 24 * 2 * 32 * 64 * 2  # flan-t5-xl decoder: 24 layers, 32 heads of 64, K and V in fp16
    block = 16 if engine == "vllm" else 1  # vLLM's paged self-attention cache: whole blocks of 16 tokens
    own = -(-(t.output_p95_tokens + 1) // block) * block
    assert m.kv_cache_needed_bytes == per_token * (own + t.prompt_p95_tokens)
    assert m.activations_bytes == e.memory.activations_bytes


def test_plan_memory_counts_a_vision_requests_images(h100):
    text = _p95_memory(LLAVA, resolve("hf", h100), "bf16", 1, _traffic(prompt_tokens=3000))
    images = _p95_memory(LLAVA, resolve("hf", h100), "bf16", 1, _traffic(prompt_tokens=3000, images_per_request=4))
    assert images.activations_bytes > text.activations_bytes
