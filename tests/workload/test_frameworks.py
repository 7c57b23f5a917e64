"""Training framework profiles (data/training/frameworks.yaml) and what their settings change in memory."""

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model
from sizeup.workload.finetune import FinetuneSpec
from sizeup.workload.frameworks import framework_ids, get_framework, resolve_settings
from sizeup.workload.quantize import get_format, nf4_matrix_bytes
from sizeup.workload.training import TrainingConfig, training_memory
from sizeup.workload.training.activations import bnb_held_input_bytes

CATALOG = load_catalog(include_user=False)
A10G = CATALOG.device("a10g")
LLAMA2 = load_model("llama-2-7b")
QLORA = FinetuneSpec(method="qlora", rank=32, targets=("q_proj", "v_proj"))


def test_every_profile_loads_with_a_source_per_setting():
    assert {"hf", "trl", "llama-factory", "unsloth", "axolotl", "litgpt", "megatron", "torchtitan",
            "torchtune"} <= set(framework_ids())
    for name in framework_ids():
        fw = get_framework(name)
        assert fw.description and len(fw.sources) == len(fw.settings) + bool(fw.default_for) and fw.settings
        assert fw.get("kernels") in ("fused", "eager", "liger", "unsloth")


def test_unknown_framework_is_a_one_line_error():
    with pytest.raises(ConfigError, match="--framework .deepspeed.: expected one of axolotl, fms-hf-tuning, hf, litgpt"):
        get_framework("deepspeed")


def test_given_settings_win_over_the_profile_which_wins_over_the_defaults():
    assert resolve_settings(None, 512)["kernels"] == "fused"
    lit = resolve_settings("litgpt", 512)
    assert lit["kernels"] == "eager" and lit["loss_chunks"] == 4 and lit["lora_dropout"] == 0.05
    assert lit["quantize_head"] and lit["dequant_copies"] == 2 and lit["keeps_last_graph"]
    assert resolve_settings("litgpt", 500)["loss_chunks"] == 4  # 128 positions at a time: 4 chunks
    assert resolve_settings("torchtune", 2048)["loss_chunks"] == 8
    assert resolve_settings("litgpt", 512, kernels="fused", loss_chunks=1) == {**lit, "kernels": "fused",
                                                                                   "loss_chunks": 1}
    assert resolve_settings("hf", 512)["double_quant"] and not resolve_settings("litgpt", 512)["double_quant"]


def qlora_memory(**changes):
    spec = dataclasses.replace(QLORA, **{k: v for k, v in changes.items() if k in ("quantize_head", "dequant_copies")})
    cfg = TrainingConfig(finetune=spec, precision="bf16", seq=512, micro_batch=2,
                         **{k: v for k, v in changes.items() if k in ("keeps_last_graph", "kernels", "recompute")})
    return training_memory(LLAMA2, A10G, cfg, 2)


def test_a_quantized_head_is_stored_in_nf4():
    nf4 = get_format("nf4")
    head = LLAMA2.vocab * LLAMA2.hidden
    saved = qlora_memory().weights_bytes - qlora_memory(quantize_head=True).weights_bytes
    assert saved == head * 2 - nf4_matrix_bytes(LLAMA2.vocab, LLAMA2.hidden, nf4)


def test_a_tied_head_gets_its_own_nf4_copy():
    gemma = load_model("gemma-2-9b")
    cfg = TrainingConfig(finetune=QLORA, precision="bf16", seq=512, micro_batch=1)
    quantized = dataclasses.replace(cfg, finetune=dataclasses.replace(QLORA, quantize_head=True))
    added = training_memory(gemma, A10G, quantized, 1).weights_bytes - training_memory(gemma, A10G, cfg, 1).weights_bytes
    assert added == nf4_matrix_bytes(gemma.vocab, gemma.hidden, get_format("nf4"))


def test_dequantized_copies_of_the_largest_weight_are_overhead():
    """Llama 2 7B's largest matrix is 11008 × 4096 (the MLP), or the 32000 × 4096 head when it is quantized;
    each copy is bf16 (fp16 then bf16 for two copies)."""
    one, two = qlora_memory(), qlora_memory(dequant_copies=2)
    assert two.overhead_bytes - one.overhead_bytes == pytest.approx(11008 * 4096 * 2, rel=0.01)
    head = qlora_memory(quantize_head=True, dequant_copies=2)
    assert head.overhead_bytes - qlora_memory(quantize_head=True).overhead_bytes == \
        pytest.approx(32000 * 4096 * 2, rel=0.01)


def test_a_loop_that_keeps_the_last_graph_holds_bitsandbytes_inputs_twice():
    cfg = TrainingConfig(finetune=QLORA, precision="bf16", seq=512, micro_batch=2)
    held = bnb_held_input_bytes(LLAMA2, cfg, 2)
    # per layer: attention input, attention output, MLP input (4096 each) and MLP product (11008), bf16
    assert held == 2 * 2 * 512 * 32 * (3 * 4096 + 11008)
    assert qlora_memory(keeps_last_graph=True).activations_bytes - qlora_memory().activations_bytes == held
    # recomputed layers hold nothing from the previous step; LoRA's products save through autograd
    assert qlora_memory(keeps_last_graph=True, recompute="full").activations_bytes == \
        qlora_memory(recompute="full").activations_bytes
    lora = TrainingConfig(finetune=dataclasses.replace(QLORA, method="lora"), precision="bf16", seq=512, micro_batch=2)
    assert training_memory(LLAMA2, A10G, dataclasses.replace(lora, keeps_last_graph=True), 2).activations_bytes == \
        training_memory(LLAMA2, A10G, lora, 2).activations_bytes


def test_eager_kernels_leave_layernorm_models_norms_alone():
    """GPT-2's LayerNorm is one kernel either way: with multi-head attention and separate products only
    trained RMSNorms would differ, so eager and fused agree."""
    gpt2 = load_model("gpt2")
    cfg = TrainingConfig(seq=256, micro_batch=2)
    assert training_memory(gpt2, A10G, dataclasses.replace(cfg, kernels="eager"), 2).activations_bytes == \
        training_memory(gpt2, A10G, cfg, 2).activations_bytes


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["full", "lora", "qlora"]), st.integers(1, 4), st.sampled_from([128, 512, 1024]))
def test_eager_keeps_at_least_the_fused_count_and_grows_with_the_batch(method, micro, seq):
    model = load_model("llama-3-8b")
    spec = FinetuneSpec(method=method, rank=8)
    fused = TrainingConfig(finetune=spec, precision="bf16", seq=seq, micro_batch=micro)
    eager = dataclasses.replace(fused, kernels="eager")
    a = training_memory(model, A10G, eager, micro).activations_bytes
    assert a > training_memory(model, A10G, fused, micro).activations_bytes
    assert training_memory(model, A10G, eager, micro + 1).activations_bytes > a
