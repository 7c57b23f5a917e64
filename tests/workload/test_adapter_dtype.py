"""PEFT's fp32 adapters (FinetuneSpec.adapter_dtype "fp32", the hf framework profile) in training memory: model
states per adapter parameter and which runs they apply to. Activations are checked against autograd in
test_peft_adapter_dtype_torch.py."""

import pytest

from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import parse_config
from sizeup.workload.finetune import FinetuneSpec, trainable_parameters
from sizeup.workload.frameworks import resolve_settings
from sizeup.workload.training import TrainingConfig, training_memory, with_settings
from sizeup.workload.training.activations import adapter_cast

ARCH = parse_config({"model_type": "llama", "hidden_size": 512, "num_attention_heads": 8, "num_key_value_heads": 8,
                     "intermediate_size": 1376, "num_hidden_layers": 2, "vocab_size": 1000,
                     "max_position_embeddings": 256})
H100 = load_catalog(include_user=False).device("h100")


def memory(precision: str, adapter_dtype: str, method: str = "lora"):
    spec = FinetuneSpec(method=method, rank=8, adapter_dtype=adapter_dtype)
    return training_memory(ARCH, H100, TrainingConfig(seq=64, precision=precision, finetune=spec), 1)


def test_pure_bf16_fp32_adapters_take_16_bytes_per_adapter_parameter():
    """fp32 weight, fp32 gradient, two fp32 AdamW moments (torch keeps them in the parameter's dtype): 16 bytes,
    where bf16 adapters in a pure bf16 run take 2 + 2 + 2 · 2."""
    n = trainable_parameters(ARCH, FinetuneSpec(method="lora", rank=8)).trainable_params
    fp32, base = memory("bf16", "fp32"), memory("bf16", "base")
    assert fp32.weights_bytes - base.weights_bytes == 2 * n
    assert (fp32.gradients_bytes, fp32.optimizer_bytes) == (4 * n, 8 * n)
    assert (base.gradients_bytes, base.optimizer_bytes) == (2 * n, 4 * n)


def test_mixed_precision_fp32_adapters_keep_16_bytes_split_differently():
    """bf16-mixed counts 2 + 2 + 4 (master) + 8; fp32 adapters are 4 + 4 + 0 + 8: the same total."""
    fp32, base = memory("bf16-mixed", "fp32"), memory("bf16-mixed", "base")
    states = lambda m: m.weights_bytes + m.gradients_bytes + m.optimizer_bytes  # noqa: E731
    assert states(fp32) == states(base)
    assert fp32.gradients_bytes == 2 * base.gradients_bytes


def test_fp32_runs_and_full_fine_tunes_are_unchanged():
    assert memory("fp32", "fp32").total_bytes == memory("fp32", "base").total_bytes
    assert adapter_cast(TrainingConfig(finetune=FinetuneSpec(method="full", adapter_dtype="fp32"))) == "none"
    assert adapter_cast(TrainingConfig(precision="bf16", finetune=FinetuneSpec(method="qlora",
                                                                               adapter_dtype="fp32"))) == "cast"
    assert adapter_cast(TrainingConfig(finetune=FinetuneSpec(method="dora", adapter_dtype="fp32"))) == "autocast"


def test_the_hf_profile_has_fp32_adapters_and_litgpt_base_ones():
    assert resolve_settings("hf", 2048)["adapter_dtype"] == "fp32"
    assert resolve_settings("litgpt", 2048)["adapter_dtype"] == "base"
    assert resolve_settings(None, 2048)["adapter_dtype"] == "base"
    cfg = with_settings(TrainingConfig(finetune=FinetuneSpec(method="lora")), resolve_settings("hf", 2048), "hf")
    assert cfg.finetune.adapter_dtype == "fp32"


def test_an_unknown_adapter_dtype_is_a_config_error():
    with pytest.raises(ConfigError, match="adapter_dtype 'fp16'"):
        FinetuneSpec(method="lora", adapter_dtype="fp16")


def test_under_full_recomputation_only_the_rematerialised_layer_holds_the_adapter_copies():
    """Gradient checkpointing keeps each layer's input; the one layer rerun in backward keeps what an
    unrecomputed layer does, PEFT's fp32 input copies included: the difference fp32 - base adapters is one
    layer's, not every layer's."""
    from sizeup.workload.training.activations import activation_bytes, adapter_activation_bytes

    def cfg(adapter_dtype, recompute):
        return TrainingConfig(seq=64, precision="bf16", recompute=recompute,
                              finetune=FinetuneSpec(method="lora", rank=8, adapter_dtype=adapter_dtype))
    layer = ARCH.layers[0]
    one_layer = adapter_activation_bytes(ARCH, layer, cfg("fp32", "none"), 1) - \
        adapter_activation_bytes(ARCH, layer, cfg("base", "none"), 1)
    assert one_layer > 0
    full = activation_bytes(ARCH, cfg("fp32", "full"), 1, 0, 1) - activation_bytes(ARCH, cfg("base", "full"), 1, 0, 1)
    none = activation_bytes(ARCH, cfg("fp32", "none"), 1, 0, 1) - activation_bytes(ARCH, cfg("base", "none"), 1, 0, 1)
    assert full == one_layer
    assert none == len(ARCH.layers) * one_layer
