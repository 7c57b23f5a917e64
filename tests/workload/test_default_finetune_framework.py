"""A LoRA / QLoRA run without --framework takes TRL's SFTTrainer profile (transformers + PEFT + bitsandbytes), the
stack most fine-tunes run and the one the validation rows measure; a full run keeps sizeup's own settings. The range
of a framework without rows is the default framework's, widened, and says so (workload/training/estimate.py
training_backing)."""

from sizeup import api
from sizeup.workload.frameworks import DEFAULT_FINETUNE, framework_for, get_framework


def test_adapter_methods_default_to_trl_and_say_so():
    name, note = framework_for(None, "qlora")
    assert name == DEFAULT_FINETUNE == "trl" and "without --framework" in note
    assert framework_for(None, "full") == (None, None)
    assert framework_for("unsloth", "lora") == ("unsloth", None)


def test_trl_checkpoints_gradients_by_default():
    # trl/trainer/sft_config.py (commit 016013e): SFTConfig's gradient_checkpointing defaults to True
    assert get_framework("trl").settings["recompute"] == "full"


def test_a_qlora_estimate_without_framework_runs_trl():
    e = api.train("llama-3.1-8b", device="l4", method="qlora", seq=2048, micro_batch=1)
    assert e.config.framework == "trl" and e.config.recompute == "full" and e.config.finetune.adapter_dtype == "fp32"
    assert any(a.startswith("framework: trl") for a in e.assumptions)
    assert e.backing["memory"].engine == "trl/qlora" and e.backing["memory"].scope == "cell"


def test_a_framework_without_rows_takes_the_default_frameworks_range_widened():
    e = api.train("llama-3.1-8b", device="l4", method="qlora", seq=2048, micro_batch=1, framework="axolotl")
    b, own = e.backing["memory"], api.train("llama-3.1-8b", device="l4", method="qlora", seq=2048,
                                             micro_batch=1).backing["memory"]
    assert b.scope == "borrowed" and "trl/qlora (the default framework's" in b.text
    assert b.high_ratio > own.high_ratio and b.low_ratio < own.low_ratio


def test_a_multi_gpu_run_is_keyed_apart():
    e = api.train("llama-3.1-8b", device="a100-sxm-80gb", method="qlora", seq=2048, micro_batch=1, gpus=2)
    assert e.backing["memory"].engine == "trl/qlora/multi-gpu"
