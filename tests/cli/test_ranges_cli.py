"""Every predicted figure is a range with what backs it, in text and JSON (issue 29): sizeup estimate, train and
roofline; counted quantities stay plain numbers, and no JSON field was renamed."""

import json

import pytest

from sizeup.cli.main import main


def _json(capsys, *argv) -> dict:
    code = main([*argv, "--json"])
    assert code in (0, 2)
    return json.loads(capsys.readouterr().out)


def _is_range(r) -> bool:
    return set(r) == {"low", "typical", "high"} and r["low"] <= r["typical"] <= r["high"]


def test_estimate_json_carries_memory_and_throughput_ranges_and_their_backing(capsys):
    d = _json(capsys, "estimate", "llama-3.1-8b", "--device", "rtx-4090", "--engine", "llama.cpp", "--quant",
              "q4_k_m", "--batch", "4")
    m = d["memory"]
    assert isinstance(m["total_bytes"], int) and _is_range(m["total_range_bytes"])
    assert m["total_range_bytes"]["typical"] == m["total_bytes"] and m["total_range_bytes"]["high"] > m["total_bytes"]
    assert isinstance(m["weights_bytes"], int)  # a count stays a number
    assert _is_range(d["throughput"]["tokens_per_s"])
    assert set(d["backing"]) == {"prefill", "decode", "memory", "throughput"}
    decode = d["backing"]["decode"]
    assert decode["engine"] == "llama.cpp" and decode["device_class"] == "consumer" and decode["rows"] > 0
    rate = d["decode"]["tokens_per_s"]
    # the slow end is the calibrated ratio; the fast end too, unless the efficiency tables' best case (the device's
    # peaks) caps it first (workload/inference_ranges.py _no_faster)
    assert rate["low"] / rate["typical"] == pytest.approx(decode["low_ratio"], rel=1e-3)
    assert 1 < rate["high"] / rate["typical"] <= decode["high_ratio"] * (1 + 1e-9)
    assert "published rows on llama.cpp" in decode["text"]


def test_estimate_text_shows_the_memory_range_and_what_backs_each_figure(capsys):
    assert main(["estimate", "llama-3.1-8b", "--device", "rtx-4090", "--engine", "llama.cpp", "--quant",
                 "q4_k_m"]) == 0
    out = capsys.readouterr().out
    total = next(line for line in out.splitlines() if line.startswith("total"))
    assert " - " in total
    # inference memory is backed by the engines' total-memory rows (mlx, torch-compile) pooled over every engine
    assert "range of decode: decode tokens/s:" in out and "range of memory: inference memory: no row on llama.cpp" in out


def test_an_engine_budget_is_exact_and_says_so(capsys):
    d = _json(capsys, "estimate", "llama-3.1-8b", "--device", "h100-sxm-80gb", "--engine", "vllm")
    r = d["memory"]["total_range_bytes"]
    assert r["low"] == r["typical"] == r["high"] and d["backing"]["memory"]["scope"] == "budget"


def test_train_json_and_text_carry_memory_and_step_ranges(capsys):
    argv = ["train", "llama-3.1-8b", "--device", "a100-sxm-80gb", "--framework", "trl", "--method", "lora",
            "--seq", "1024", "--micro-batch", "1"]
    d = _json(capsys, *argv)
    m = d["memory"]["per_gpu"]
    assert _is_range(m["total_range_bytes"]) and _is_range(m["allocated_range_bytes"]) and _is_range(m["process_bytes"])
    assert set(d["backing"]) == {"step", "memory"} and d["backing"]["memory"]["engine"] == "trl/lora"
    step = d["step"]["latency_s"]
    assert step["high"] / step["typical"] == pytest.approx(1 / d["backing"]["step"]["low_ratio"])
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "range of memory: training and fine-tuning memory:" in out and "range of step:" in out


def test_a_plans_latencies_carry_ranges_and_what_backs_them(capsys):
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "team-api-200-users.yaml"
    assert main(["plan", str(example), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    chosen = data["plan"]["chosen"]
    ranges = chosen["latency_range_s"]
    assert set(ranges) == set(chosen["latency_s"]) and ranges
    for name, r in ranges.items():
        assert r["low"] <= chosen["latency_s"][name] == r["typical"] <= r["high"]
        assert "latency percentiles under load" in r["backing"]
