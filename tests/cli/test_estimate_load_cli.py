"""`sizeup estimate ... --concurrency N|inf | --rps R`: throughput under load from the command line."""

import json

import pytest

from sizeup.cli.main import main

BASE = ["estimate", "llama-3.1-8b", "--device", "h100-sxm-80gb", "--engine", "tensorrt-llm", "--quant", "fp8"]


def _json(capsys, *argv):
    assert main([*BASE, *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_offline_load_reports_every_rate_and_latency(capsys):
    d = _json(capsys, "--input-len", "1000", "--output-len", "1000", "--concurrency", "inf")
    load = d["throughput_under_load"]
    for key in ("output_tokens_per_s", "total_tokens_per_s", "input_tokens_per_s", "requests_per_s",
                "decode_only_tokens_per_s", "ttft_s", "tpot_s", "e2e_latency_s"):
        assert load[key]["low"] <= load[key]["typical"] <= load[key]["high"]
    assert load["load"]["concurrency"] is None and load["requests"]["input_tokens"] == 1000
    assert d["config"]["kv_dtype"] == "fp8"  # TensorRT-LLM on an FP8 checkpoint


def test_a_dataset_gives_the_lengths_and_explicit_ones_win(capsys):
    d = _json(capsys, "--dataset", "sharegpt", "--rps", "2")
    assert (d["config"]["prompt_tokens"], d["config"]["output_tokens"]) == (227, 194)
    d = _json(capsys, "--dataset", "sharegpt", "--output", "50", "--concurrency", "4")
    assert d["throughput_under_load"]["requests"]["output_tokens"] == 50


def test_a_finite_run_at_a_rate_is_priced_as_the_serving_benchmarks_send_it(capsys):
    """vllm bench serve / sglang.bench_serving --request-rate 4 --num-prompts 40: a finite run of Poisson arrivals."""
    d = _json(capsys, "--prompt", "500", "--output", "100", "--rps", "4", "--num-prompts", "40")
    load = d["throughput_under_load"]
    assert load["load"]["num_prompts"] == 40 and load["load"]["requests_per_s"] == 4
    assert any("a finite run of 40 requests, sent at 4 requests/s (Poisson" in a for a in load["assumptions"])
    assert load["requests_per_s"]["typical"] < 4  # 40 requests over ~10 s of arrivals and the last one's e2e


def test_the_sweep_adds_throughput_under_load(capsys):
    d = _json(capsys, "--sweep", "1,16")
    assert all(p["under_load"]["load"]["concurrency"] == p["batch"] for p in d["batch_sweep"])


@pytest.mark.parametrize("argv, message", [
    (["--dataset", "sharegpt"], "--dataset sharegpt: describes requests under load"),
    (["--dataset", "nope", "--rps", "1"], "--dataset 'nope': expected one of"),
    (["--concurrency", "0"], "--concurrency '0': expected a positive integer or 'inf'"),
    (["--concurrency", "4", "--rps", "1"], "--concurrency and --rps: give one"),
    (["--concurrency", "4", "--batch", "8"], "--batch 8: under load the engine forms its batches"),
    (["--engine-opt", "frobnicate"], "not an option sizeup models for tensorrt-llm"),
    (["--replicas", "2"], "--replicas 2: with --concurrency"),
    (["--rps", "2", "--num-prompts", "1000001"], "--num-prompts 1000001: expected a positive integer <= 1,000,000"),
])
def test_bad_load_flags_are_one_line_errors(capsys, argv, message):
    assert main([*BASE, *argv]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
