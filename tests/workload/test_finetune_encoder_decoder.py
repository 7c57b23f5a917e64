"""LoRA on an encoder-decoder adapts the encoder as PEFT does (issue 16).

PEFT matches a target module name wherever the module sits (the path ends with it), so its default targets
for t5 (["q", "v"], peft/utils/constants.py TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING) adapt the
encoder's self-attention, the decoder's self-attention and its cross-attention; Whisper with the usual
["q_proj", "v_proj"] the same three. Hand counts from the configs below; where torch, transformers and peft
are installed, the exact count PEFT builds on the meta device."""

import json
from pathlib import Path

import pytest

from sizeup.errors import ConfigError
from sizeup.formats import get_format, nf4_matrix_bytes, tensor_bytes
from sizeup.ingest.families.registry import parse_config
from sizeup.workload.finetune import FinetuneSpec, Method, adapts_encoder, trainable_parameters

CONFIGS = Path(__file__).parents[1] / "ingest" / "configs"


def _config(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


def _arch(name: str):
    return parse_config(_config(name), name)


def _lora(arch, targets, rank=16, method=Method.LORA) -> int:
    return trainable_parameters(arch, FinetuneSpec(method=method, rank=rank, targets=tuple(targets))).trainable_params


def test_flan_t5_q_v_adapters_sit_in_the_encoder_the_decoder_and_the_cross_attention():
    c = _config("flan-t5-xl")
    h, inner = c["d_model"], c["num_heads"] * c["d_kv"]
    blocks = c["num_layers"] + 2 * c["num_decoder_layers"]  # encoder self, decoder self, decoder cross
    hand = blocks * 2 * 16 * (h + inner)  # q and v: A [r × h] + B [inner × r]
    assert hand == 9_437_184
    arch = _arch("flan-t5-xl")
    assert _lora(arch, ["q_proj", "v_proj"]) == hand
    assert _lora(arch, ["q", "v"]) == hand  # transformers' T5 module names, as a PEFT config gives them


def test_whisper_q_v_adapters_sit_in_all_three_attention_blocks():
    c = _config("whisper-small")
    h = c["d_model"]
    blocks = c["encoder_layers"] + 2 * c["decoder_layers"]
    assert _lora(_arch("whisper-small"), ["q_proj", "v_proj"]) == blocks * 2 * 16 * 2 * h


def test_all_linear_counts_every_encoder_linear_but_not_the_head():
    c = _config("flan-t5-xl")
    h, inner, ff = c["d_model"], c["num_heads"] * c["d_kv"], c["d_ff"]
    attention = 4 * (h + inner)  # q, k, v, o
    mlp = 3 * (h + ff)  # wi_0, wi_1, wo (gated-gelu)
    per_encoder, per_decoder = attention + mlp, 2 * attention + mlp
    hand = 16 * (c["num_layers"] * per_encoder + c["num_decoder_layers"] * per_decoder)
    assert _lora(_arch("flan-t5-xl"), ["all-linear"]) == hand


def test_the_encoder_trains_under_adapters_and_full_fine_tuning_not_under_freeze():
    arch = _arch("flan-t5-xl")
    assert adapts_encoder(arch, FinetuneSpec(method=Method.LORA))
    assert adapts_encoder(arch, FinetuneSpec(method=Method.FULL))
    assert not adapts_encoder(arch, FinetuneSpec(method=Method.LORA, targets=("lm_head",)))
    assert not adapts_encoder(arch, FinetuneSpec(method=Method.FREEZE, trainable_layers=2))
    assert not adapts_encoder(_arch("phi-2"), FinetuneSpec(method=Method.LORA))  # no encoder at all


def test_freeze_trains_the_decoders_final_norm_not_the_encoders():
    arch = _arch("flan-t5-xl")
    c = _config("flan-t5-xl")
    spec = FinetuneSpec(method=Method.FREEZE, trainable_layers=1)
    trainable = trainable_parameters(arch, spec).trainable_params
    last = sum(t.numel for t in arch.tensors() if t.layer == c["num_decoder_layers"] - 1)
    assert trainable == last + c["d_model"] + c["vocab_size"] * c["d_model"]  # + final norm + untied head


def test_qlora_stores_the_encoders_linears_in_nf4():
    arch = _arch("flan-t5-xl")
    nf4 = get_format("nf4")
    q = next(t for t in arch.tensors() if t.name == "encoder.layers.0.attn.q_proj.weight")
    assert tensor_bytes(q, arch, nf4) == nf4_matrix_bytes(*q.shape, nf4)
    conv = next(t for t in _arch("whisper-small").tensors() if t.name == "encoder.conv1.weight")
    assert conv.role == "conv" and tensor_bytes(conv, arch, nf4) == conv.numel * 2  # convolutions stay 16-bit


def test_a_target_no_module_has_is_a_one_line_error():
    with pytest.raises(ConfigError, match="--targets 'wi' matches no module of flan-t5-xl"):
        _lora(_arch("flan-t5-xl"), ["wi"])


# ---- against PEFT itself ----------------------------------------------------------------------------------
CASES = [("flan-t5-xl", ["q", "v"], ("q_proj", "v_proj"), Method.LORA),
         ("flan-t5-xl", "all-linear", ("all-linear",), Method.LORA),
         ("whisper-small", ["q_proj", "v_proj"], ("q_proj", "v_proj"), Method.LORA),
         ("whisper-tiny", "all-linear", ("all-linear",), Method.DORA)]


@pytest.mark.parametrize("name,peft_targets,targets,method", CASES)
def test_trainable_parameters_equal_what_peft_builds(name, peft_targets, targets, method):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    peft = pytest.importorskip("peft")
    from sizeup.ingest.generic import build_meta_model

    model = peft.get_peft_model(build_meta_model(_config(name)),
                                peft.LoraConfig(r=16, target_modules=peft_targets, use_dora=method == Method.DORA))
    built = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert _lora(_arch(name), targets, method=method) == built


def test_a_bart_read_by_transformers_counts_peft_adapters_in_encoder_and_cross_attention():
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    peft = pytest.importorskip("peft")
    from sizeup.ingest.generic import build_meta_model, read_generic

    transformers.logging.set_verbosity_error()
    data = {"model_type": "bart", "vocab_size": 1000, "d_model": 64, "encoder_layers": 2, "decoder_layers": 2,
            "encoder_attention_heads": 4, "decoder_attention_heads": 4, "encoder_ffn_dim": 128,
            "decoder_ffn_dim": 128, "max_position_embeddings": 128, "architectures": ["BartForConditionalGeneration"]}
    arch = read_generic(data, "tiny-bart")
    for peft_targets, targets in ((None, ("q_proj", "v_proj")), ("all-linear", ("all-linear",))):
        model = peft.get_peft_model(build_meta_model(data), peft.LoraConfig(r=8, target_modules=peft_targets))
        built = sum(p.numel() for p in model.parameters() if p.requires_grad)
        assert _lora(arch, targets, rank=8) == built


# ---- the attention kernel a T5 runs ------------------------------------------------------------------------
def test_t5_under_sdpa_runs_the_memory_efficient_kernel_and_keeps_each_layers_bias():
    from sizeup.hardware.catalog import load_catalog
    from sizeup.workload.training import TrainingConfig, estimate_training
    from sizeup.workload.training.encoder_decoder import relative_bias_bytes

    arch, h100 = _arch("flan-t5-xl"), load_catalog(include_user=False).device("h100")
    cfg = TrainingConfig(seq=128, source_seq=512, micro_batch=4, finetune=FinetuneSpec(method=Method.LORA))
    e = estimate_training(arch, h100, cfg)
    assert any("memory-efficient kernel" in a and "flash refuses" in a for a in e.assumptions)
    assert not any("flash kernel" in a for a in e.assumptions)
    c = _config("flan-t5-xl")
    heads, layers = c["num_heads"], c["num_layers"]
    # 24 encoder layers × 32 heads × 512², 24 decoder layers × 32 × 128², one shared cross bias 32 × 128 × 512,
    # bf16; the decoder's causal condition 128² bytes per layer (lengths aligned to 8: no padding)
    hand = 2 * heads * (layers * 512 * 512 + layers * 128 * 128 + 128 * 512) + layers * 128 * 128
    assert relative_bias_bytes(arch, e.config) == hand


def test_flash_attention_2_on_a_t5_is_a_one_line_error():
    from sizeup.hardware.catalog import load_catalog
    from sizeup.workload.training import TrainingConfig, estimate_training

    with pytest.raises(ConfigError, match="--attention flash2 with flan-t5-xl"):
        estimate_training(_arch("flan-t5-xl"), load_catalog(include_user=False).device("h100"),
                          TrainingConfig(seq=128, micro_batch=1, attention="flash2"))


def test_qlora_leaves_t5s_wo_unquantized_as_transformers_does():
    """T5's `_keep_in_fp32_modules = ["wo"]` joins the modules bitsandbytes does not convert: every layer's MLP
    down projection (d_ff × d_model) stays bf16, 2 bytes against NF4's 0.5 + block scales."""
    from sizeup.hardware.catalog import load_catalog
    from sizeup.workload.training import TrainingConfig, training_memory

    arch, c = _arch("flan-t5-xl"), _config("flan-t5-xl")
    h100 = load_catalog(include_user=False).device("h100")
    nf4 = get_format("nf4")
    down = [t for t in arch.tensors() if t.name.endswith("down_proj.weight")]
    assert len(down) == c["num_layers"] + c["num_decoder_layers"]
    cfg = TrainingConfig(seq=128, source_seq=512, finetune=FinetuneSpec(method=Method.QLORA))
    all_nf4 = sum(tensor_bytes(t, arch, nf4) for t in arch.tensors())
    kept = sum(t.numel * 2 - tensor_bytes(t, arch, nf4) for t in down)
    trainable = trainable_parameters(arch, cfg.finetune).trainable_params
    weights = training_memory(arch, h100, cfg, 1).weights_bytes
    assert weights == int(all_nf4 + kept + trainable * 2)
