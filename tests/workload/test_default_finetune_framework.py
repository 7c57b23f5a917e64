"""A LoRA / QLoRA run without --framework takes TRL's SFTTrainer profile (transformers + PEFT + bitsandbytes), the
stack most fine-tunes run and the one the validation rows measure; a full run keeps sizeup's own settings. The range
of a framework without rows is the default framework's, widened, and says so (workload/training/estimate.py
training_backing)."""

from sizeup import api
from sizeup.workload.frameworks import framework_for, get_framework


def test_adapter_methods_default_to_trl_and_say_so():
    name, note = framework_for(None, "qlora")
    assert name == "trl" and "without --framework" in note
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
    # widened (a ratio r becomes r^1.5): the high end grows; a low end at the typical (ratio 1.0) stays there
    assert b.high_ratio > own.high_ratio and b.low_ratio <= own.low_ratio


def test_a_multi_gpu_run_is_keyed_apart():
    e = api.train("llama-3.1-8b", device="a100-sxm-80gb", method="qlora", seq=2048, micro_batch=1, gpus=2)
    assert e.backing["memory"].engine == "trl/qlora/multi-gpu"


def test_the_default_is_read_from_the_profiles_data():
    # data/training/frameworks.yaml trl.default_for, with its source and date
    from sizeup.workload.frameworks import default_framework

    trl = get_framework("trl")
    assert set(trl.default_for) == {"lora", "qlora", "dora"}
    assert any(s.startswith("default_for: ") and "2026-12-05" in s for s in trl.sources)
    assert default_framework("dora") == "trl" and default_framework("full") is None and default_framework() == "trl"
    assert all(not get_framework(n).default_for for n in ("hf", "unsloth", "axolotl", "litgpt"))


def test_a_default_for_without_source_or_with_an_unknown_method_is_refused():
    import pytest

    from sizeup.errors import CatalogError
    from sizeup.workload.frameworks import _default_for

    with pytest.raises(CatalogError, match="needs a list value, a source"):
        _default_for("f.yaml", "x", {"value": ["lora"]})
    with pytest.raises(CatalogError, match="'lorax' is not a method"):
        _default_for("f.yaml", "x", {"value": ["lorax"], "source": "s", "retrieved": "2026-12-05"})
