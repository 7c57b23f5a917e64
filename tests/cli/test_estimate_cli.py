import json

import pytest

from sizeup.cli.main import main


def test_estimate_json_fields(capsys):
    assert main(["estimate", "llama-3.1-8b", "--device", "rtx-4090", "--quant", "q4_k_m", "--engine", "llama.cpp",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["model"]["params"] == 8_030_261_248 and data["model"]["active_params"] == 8_030_261_248
    for key in ("weights_bytes", "kv_cache_bytes", "activations_bytes", "overhead_bytes", "total_bytes", "usable_bytes"):
        assert key in data["memory"]
    assert data["fits"] is True and data["max_context"] > 0 and data["max_batch"] > 0
    for phase, key in (("prefill", "latency_s"), ("prefill", "tokens_per_s"), ("decode", "latency_per_token_s"),
                       ("decode", "tokens_per_s")):
        r = data[phase][key]
        assert r["low"] <= r["typical"] <= r["high"]
    assert isinstance(data["assumptions"], list)


def test_estimate_table_for_moe(capsys):
    assert main(["estimate", "mixtral-8x7b", "--device", "a100-80g", "--gpus", "2", "--engine", "vllm"]) == 0
    out = capsys.readouterr().out
    assert "12.88B active" in out and "prefill (TTFT)" in out


@pytest.mark.parametrize("argv, message", [
    (["nope-model", "--device", "4090"], "unknown model 'nope-model'"),
    (["llama-3.1-8b", "--device", "rtx 9999"], "unknown device 'rtx 9999'"),
    (["llama-3.1-8b", "--device", "4090", "--batch", "-2"], "--batch -2: expected a positive integer"),
    (["llama-3.1-8b", "--device", "4090", "--quant", "q9"], "unknown quantization 'q9'"),
    (["llama-3.1-8b", "--device", "4090", "--engine", "vllm", "--gpus", "3"], "does not divide"),
    (["llama-3.1-8b", "--device", "h100", "--gpu-layers", "4"], "--gpu-layers is a llama.cpp or ollama option"),
])
def test_estimate_bad_input(capsys, argv, message):
    assert main(["estimate", *argv]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_config_missing_field(tmp_path, capsys):
    """A null size stays null (transformers passes it to the class): refused in one line."""
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 64,
                                                      "num_hidden_layers": None}))
    assert main(["estimate", str(tmp_path), "--device", "4090"]) == 1
    assert "missing field 'num_hidden_layers'" in capsys.readouterr().err


def test_config_left_out_fields_take_the_class_defaults_and_say_so(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 256,
                                                      "num_attention_heads": 4, "num_hidden_layers": 2}))
    assert main(["estimate", str(tmp_path), "--device", "4090", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    note = next(a for a in out["assumptions"] if a.startswith("filled from LlamaConfig defaults"))
    assert "vocab_size=32000" in note and "intermediate_size=11008" in note


def test_batch_sweep(capsys):
    assert main(["estimate", "llama-3.1-8b", "--device", "l4", "--quant", "awq-int4", "--engine", "vllm",
                 "--sweep", "1,8,64", "--json"]) == 0
    sweep = json.loads(capsys.readouterr().out)["batch_sweep"]
    assert [p["batch"] for p in sweep] == [1, 8, 64]
    rates = [p["tokens_per_s"]["typical"] for p in sweep]
    tpots = [p["tpot_s"]["typical"] for p in sweep]
    assert rates == sorted(rates) and tpots == sorted(tpots)  # throughput and latency both grow with batch
    assert main(["estimate", "llama-3.1-8b", "--device", "l4", "--sweep", "0,2"]) == 1
    assert "every batch size must be a positive integer" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [  # issue 14: numbers at the edge
    (["--prompt", str(10**12)], "--prompt 1,000,000,000,000 + --output 128 tokens: longer than the 131,072-token "
                                "context of llama-3.1-8b"),
    (["--context", "200000"], "--context 200,000: longer than the 131,072-token context"),
    (["--batch", "nan"], "--batch nan: not a finite number"),
    (["--batch", str(10**30)], "expected a positive integer <= 10,000,000"),
    (["--gpus", "1.5"], "--gpus 1.5: expected a positive integer"),
    (["--prompt", "inf"], "--prompt inf: not a finite number"),
    (["--output", "-1"], "--output -1: expected a whole number >= 0"),
])
def test_hostile_numbers_are_one_line(capsys, argv, message):
    assert main(["estimate", "llama-3.1-8b", "--device", "4090", *argv]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_token_counts_take_a_suffix(capsys):
    assert main(["estimate", "llama-3.1-8b", "--device", "4090", "--prompt", "4k", "--output", "1e3", "--json"]) == 0
    config = json.loads(capsys.readouterr().out)["config"]
    assert config["prompt_tokens"] == 4000 and config["output_tokens"] == 1000


# ---- without one device: the table of devices; one that does not fit says what would (issue 19) ------


def test_estimate_without_a_device_compares_common_cards(capsys):
    import json

    from sizeup.hardware.segments import COMMON_DEVICES

    assert main(["estimate", "llama-3.1-8b", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["devices"]
    assert {r["device"] for r in rows} == set(COMMON_DEVICES)
    by = {r["device"]: r for r in rows}
    # an 8B model at q8_0 (8.5 bits per weight, ~8.5 GB) fits a 12 GB card under llama.cpp; vLLM serves bf16 on an A100
    assert by["rtx-3060-12gb"]["format"] == "q8_0" and by["rtx-3060-12gb"]["engine"] == "llama.cpp"
    assert by["a100-sxm-80gb"]["format"] == "bf16" and by["a100-sxm-80gb"]["engine"] == "vllm"
    for r in rows:
        if r["usd_per_million_tokens"] is not None:  # $/M tokens = $/h / (tokens/s x 3600) x 1e6
            assert r["usd_per_million_tokens"] == pytest.approx(
                r["usd_per_gpu_hour"] / (r["decode_tokens_per_s"] * 3600) * 1e6)


def test_estimate_devices_class_picks_the_format_that_fits(capsys):
    import json

    assert main(["estimate", "llama-3.1-70b", "--devices", "consumer", "--json"]) == 0
    rows = {r["device"]: r for r in json.loads(capsys.readouterr().out)["devices"]}
    assert all(r["segment"] == "consumer" for r in rows.values())
    assert rows["rtx-3060-12gb"]["fits"] is False and "usable" in rows["rtx-3060-12gb"]["reason"]
    # 70B at q2_k is ~26 GB: a 32 GB RTX 5090 holds it, a 24 GB 4090 holds none of the ladder
    assert rows["rtx-5090"]["format"] == "q2_k"
    assert rows["rtx-4090"]["fits"] is False and rows["rtx-4090"]["formats_tried"][-1] == "q2_k"


def test_estimate_that_does_not_fit_says_what_would_and_exits_2(capsys):
    import json

    args = ["estimate", "llama-3.1-70b", "--device", "rtx-4090", "--engine", "vllm", "--quant", "bf16"]
    assert main(args) == 2
    out = capsys.readouterr().out
    assert "DOES NOT FIT" in out and "what would fit" in out and "--gpus 8" in out
    assert main([*args, "--json"]) == 2
    data = json.loads(capsys.readouterr().out)
    changes = {s["flag"]: s["value"] for s in data["would_fit"]}
    assert changes["gpus"] == 8 and data["fits"] is False
    # each suggestion is checked by a full estimate
    assert main(["estimate", "llama-3.1-70b", "--device", "rtx-4090", "--engine", "vllm", "--quant", "bf16",
                 "--gpus", "8"]) == 0


def test_a_table_refuses_one_device_flags():
    assert main(["estimate", "llama-3.1-8b", "--devices", "edge", "--gpu-layers", "10"]) == 1
    assert main(["estimate", "llama-3.1-8b", "--devices", "edge", "--device", "l4"]) == 1
