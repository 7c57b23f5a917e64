import json

import pytest

from sizeup.cli.main import main


def run_json(capsys, *argv):
    assert main(["train", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_train_json_fields(capsys):
    data = run_json(capsys, "qwen2.5-7b", "--method", "lora", "--rank", "16", "--targets", "q_proj,v_proj",
                    "--device", "4090", "--seq", "4096", "--recompute", "full", "--micro-batch", "1", "--tokens", "1e8")
    per_gpu = data["memory"]["per_gpu"]
    for key in ("total_bytes", "weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes",
                "overhead_bytes"):
        assert key in per_gpu
    assert data["fits"] is True and data["max_micro_batch"] >= 1
    for key in ("step", "throughput", "mfu", "time_to_train_s", "gpu_hours", "cost_usd"):
        assert data[key] is not None
    assert data["step"]["latency_s"]["low"] <= data["step"]["latency_s"]["high"]
    assert data["gpu_hours"]["typical"] == pytest.approx(data["time_to_train_s"]["typical"] / 3600, rel=1e-12)
    assert data["model"]["trainable_params"] == 28 * 16 * ((3584 + 3584) + (3584 + 512))


def test_compare_full_lora_qlora(capsys):
    data = run_json(capsys, "llama-3.1-8b", "--compare", "full,lora,qlora", "--device", "a100-80g", "--seq", "2048",
                    "--tokens", "1e9")
    rows = {r["method"]: r for r in data["methods"]}
    assert rows["full"]["memory_per_gpu_bytes"] > rows["lora"]["memory_per_gpu_bytes"] > \
        rows["qlora"]["memory_per_gpu_bytes"]
    assert rows["qlora"]["smallest_gpu_count"] == 1 and rows["full"]["smallest_gpu_count"] > 1
    assert main(["train", "llama-3.1-8b", "--compare", "full,lora", "--device", "a100-80g"]) == 0
    assert "min GPUs" in capsys.readouterr().out


def test_multi_node_tensor_and_pipeline_parallel(capsys):
    data = run_json(capsys, "llama-3.1-70b", "--device", "h100", "--gpus", "64", "--nodes", "8", "--tp", "8",
                    "--pp", "2", "--zero", "1", "--seq", "4096", "--micro-batch", "1", "--global-batch", "512",
                    "--recompute", "selective")
    assert data["config"]["dp"] == 4 and data["config"]["grad_accumulation"] == 128
    assert data["step"]["breakdown_s"]["tensor_parallel"] > 0 and data["step"]["breakdown_s"]["pipeline_bubble"] > 0
    assert 0 < data["mfu"]["typical"] < 1


def test_traced_torch_module(capsys):
    pytest.importorskip("torch")
    data = run_json(capsys, "sizeup.examples.zoo:c2f", "--input", "4x64x32x32", "--device", "a10")
    by_category = data["memory"]["per_gpu"]["by_category"]
    assert sum(by_category.values()) == data["memory"]["per_gpu"]["total_bytes"]
    assert set(data["step"]["by_phase_s"]) == {"forward", "backward", "optimizer"}


@pytest.mark.parametrize("argv, message", [
    (["llama-3.1-8b", "--device", "4090", "--method", "lora", "--rank", "0"], "--rank 0"),
    (["llama-3.1-8b", "--device", "4090", "--method", "lora", "--targets", "wq"],
     "--targets 'wq' matches no module of llama-3.1-8b: modules are down_proj"),
    (["llama-3.1-8b", "--device", "h100", "--gpus", "6", "--tp", "6"], "does not divide the 32 attention heads"),
    (["llama-3.1-8b", "--device", "h100", "--tokens", "-5"], "--tokens -5: expected a positive number"),
    (["llama-3.1-8b", "--device", "h100", "--epochs", "2"], "--epochs needs --dataset-tokens"),
    (["llama-3.1-8b", "--device", "h100", "--compare", "full,sgd"], "--compare 'full,sgd'"),
])
def test_bad_train_input(capsys, argv, message):
    assert main(["train", *argv]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_framework_settings_and_what_the_command_line_overrides(capsys):
    argv = ["llama-2-7b", "--method", "qlora", "--rank", "32", "--device", "a10g", "--seq", "512",
            "--micro-batch", "2", "--precision", "bf16"]
    lit = run_json(capsys, *argv, "--framework", "litgpt")
    assert lit["config"]["framework"] == "litgpt" and lit["config"]["kernels"] == "eager"
    assert lit["config"]["loss_chunks"] == 4
    assert any("bitsandbytes keeps its products' inputs" in a for a in lit["assumptions"])
    fused = run_json(capsys, *argv, "--framework", "litgpt", "--kernels", "fused", "--loss-chunks", "1")
    assert fused["config"]["kernels"] == "fused" and fused["config"]["loss_chunks"] == 1
    assert fused["memory"]["per_gpu"]["total_bytes"] < lit["memory"]["per_gpu"]["total_bytes"]
    plain = run_json(capsys, *argv)  # QLoRA without --framework: TRL's SFTTrainer profile, and it says so
    assert plain["config"]["framework"] == "trl" and plain["config"]["kernels"] == "eager"
    assert plain["config"]["recompute"] == "full" and any(a.startswith("framework: trl") for a in plain["assumptions"])


@pytest.mark.parametrize("argv, message", [
    (["train", "llama-2-7b", "--device", "a10g", "--framework", "deepspeed"],
     "argument --framework: invalid choice: 'deepspeed'"),
    (["train", "llama-2-7b", "--device", "a10g", "--kernels", "triton"], "argument --kernels: invalid choice: 'triton'"),
    (["train", "llama-2-7b", "--device", "a10g", "--micro-batch", "two"], "--micro-batch two: expected a positive integer"),
    (["runs", "export", "1", "--format", "xml"], "argument --format: invalid choice: 'xml'"),
])
def test_bad_arguments_are_one_line_errors_with_exit_code_1(capsys, argv, message):
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize("argv, message", [  # issue 14: NaN, Infinity and signs refused at the flag
    (["--tokens", "nan"], "--tokens nan: not a finite number"),
    (["--tokens", "inf"], "--tokens inf: not a finite number"),
    (["--epochs", "nan", "--dataset-tokens", "1e9"], "--epochs nan: not a finite number"),
    (["--gpus", "16", "--nodes", "2", "--network-gbps", "-100"], "--network-gbps -100: expected a positive number"),
    (["--network-gbps", "nan"], "--network-gbps nan: not a finite number"),
    (["--zero", "4"], "--zero 4: expected a whole number >= 0 and <= 3"),
    (["--method", "lora", "--lora-dropout", "nan"], "--lora-dropout nan: not a finite number"),
    (["--seq", "2048.5"], "--seq 2048.5: expected a positive integer"),
])
def test_hostile_numbers_are_one_line(capsys, argv, message):
    assert main(["train", "llama-3.1-8b", "--device", "h100", *argv]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_network_and_tokens_take_units(capsys):
    argv = ["llama-3.1-8b", "--device", "h100", "--gpus", "16", "--nodes", "2", "--zero", "3"]  # fits: exit 0
    with_units = run_json(capsys, *argv, "--network-gbps", "50GB/s", "--tokens", "2B")
    plain = run_json(capsys, *argv, "--network-gbps", "400", "--tokens", "2e9")
    assert with_units["time_to_train_s"] == plain["time_to_train_s"] and plain["time_to_train_s"] is not None


def test_framework_profile_and_dataset_shaped_lengths(capsys):
    """Issue 29: --framework takes the framework's recompute, optimizer and loss; --mean-seq prices time at the padded
    length and memory at --seq, and says so."""
    data = run_json(capsys, "llama-3-8b", "--method", "qlora", "--device", "4090", "--framework", "unsloth",
                    "--seq", "4096", "--mean-seq", "900", "--micro-batch", "4")
    cfg = data["config"]
    assert (cfg["recompute"], cfg["optimizer"], cfg["loss"], cfg["mean_seq"]) == ("offload", "adamw-8bit",
                                                                                 "fused-linear", 900)
    throughput = data["throughput"]
    assert throughput["tokens_per_s"]["typical"] < throughput["processed_tokens_per_s"]["typical"]
    per_gpu = data["memory"]["per_gpu"]
    assert per_gpu["total_range_bytes"]["low"] <= per_gpu["total_bytes"] < per_gpu["process_bytes"]["typical"]
    assert any("padding to the longest" in a for a in data["assumptions"])
    text_argv = ["train", "llama-3-8b", "--method", "lora", "--device", "a100-80g", "--framework", "hf", "--seq", "2048",
                 "--packing", "--micro-batch", "2"]
    assert main(text_argv) == 0
    out = capsys.readouterr().out
    assert "loss: upcast" in out and "packing: rows of 2,048 tokens" in out


@pytest.mark.parametrize("argv, message", [
    (["--mean-seq", "5000", "--seq", "4096"], "--mean-seq 5000: expected a length from 1 to --seq 4,096"),
    (["--padded-seq", "300", "--packing", "--seq", "512"], "--padded-seq describes padded batches"),
    (["--loss", "sum"], "argument --loss: invalid choice: 'sum'"),
])
def test_dataset_and_loss_flags_refuse_bad_values_in_one_line(capsys, argv, message):
    assert main(["train", "llama-3-8b", "--method", "lora", "--device", "a100-80g", "--micro-batch", "1", *argv]) != 0
    err = capsys.readouterr().err
    assert message in err and err.count("\n") <= 2
