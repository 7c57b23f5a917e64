"""Training memory follows the attention kernel that runs (issue 16 item 4).

BERT-large (335M parameters) fine-tuned in fp32 at batch 4 × 512 on a V100: with eager attention every
layer keeps the fp32 softmax output (4 bytes), its dropout mask (1) and the dropped copy (4) per score,
s²·b·a = 512²·4·16 scores, i.e. 9 × 16.8M = 151 MB per layer, 3.62 GB over 24 layers."""

import pytest

from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import parse_config
from sizeup.workload.frameworks import resolve_settings
from sizeup.workload.training import TrainingConfig, estimate_training, with_settings

BERT_LARGE = {"architectures": ["BertForSequenceClassification"], "model_type": "bert", "hidden_size": 1024,
              "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096, "hidden_act": "gelu",
              "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 512,
              "type_vocab_size": 2, "vocab_size": 30522, "layer_norm_eps": 1e-12, "pad_token_id": 0}


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(include_user=False)


def _estimate(catalog, device, precision, attention=None, framework="hf"):
    arch = parse_config(BERT_LARGE, name="bert-large")
    cfg = with_settings(TrainingConfig(precision=precision, seq=512, micro_batch=4),
                        resolve_settings(framework, 512, attention=attention), framework)
    return estimate_training(arch, catalog.device(device), cfg)


def test_eager_keeps_the_fp32_scores_softmax_and_dropout_masks(catalog):
    eager = _estimate(catalog, "v100-sxm2-16gb", "fp32", "eager")
    sdpa = _estimate(catalog, "v100-sxm2-16gb", "fp32", "sdpa")
    scores = 24 * 512 * 512 * 4 * 16 * (4 + 1 + 4)
    # the output projection's input (a reshaped copy under eager, a view of the fused kernel's output under SDPA)
    # is kept once either way: probabilities × V saves its inputs, not its output (autograd's saved tensors of
    # transformers' eager attention, tests/workload/test_encoder_decoder_training_torch.py)
    assert eager.memory.activations_bytes - sdpa.memory.activations_bytes == scores
    assert any("eager" in a and "s² softmax" in a for a in eager.assumptions)
    assert any("memory-efficient" in a for a in sdpa.assumptions)


def test_fp32_activations_are_four_bytes(catalog):
    fp32 = _estimate(catalog, "a100-sxm-80gb", "fp32")
    bf16 = _estimate(catalog, "a100-sxm-80gb", "bf16-mixed")
    # both fused (memory-efficient in fp32, flash in bf16): twice the bytes, except the 1-byte dropout masks
    assert 1.8 < fp32.memory.activations_bytes / bf16.memory.activations_bytes < 2.0


def test_hf_framework_defaults_to_sdpa(catalog):
    e = _estimate(catalog, "t4", "bf16-mixed")  # T4: no bf16 fused kernel, so SDPA falls back to math
    assert e.config.attention == "sdpa" and not e.config.flash_attention
    assert any("math path" in a for a in e.assumptions)


def test_flash2_on_a_v100_is_refused(catalog):
    with pytest.raises(ConfigError, match="v100-sxm2-16gb"):
        _estimate(catalog, "v100-sxm2-16gb", "fp32", "flash2")


def test_flashattention2_on_hopper_runs_at_its_own_fraction_not_the_generic_one(catalog):
    """FlashAttention-2 has no wgmma/TMA path: 35% of the H100 peak (FlashAttention-3 paper), against the
    generic 60% a fused kernel gets (data/efficiency/gpu.yaml); on Ampere the generic figure stays."""
    from sizeup.price.attention_kernels import flash2_fraction

    fraction, source = flash2_fraction(catalog.device("h100-sxm-80gb"))
    assert fraction.typical == 0.35 and "2407.08608" in source
    assert flash2_fraction(catalog.device("a100-sxm-80gb")) is None
    h100_fa2, h100_sdpa = (_estimate(catalog, "h100-sxm-80gb", "bf16-mixed", a) for a in ("flash2", "sdpa"))
    a100_fa2, a100_sdpa = (_estimate(catalog, "a100-sxm-80gb", "bf16-mixed", a) for a in ("flash2", "sdpa"))
    assert h100_fa2.step_s.typical > h100_sdpa.step_s.typical
    assert any("FlashAttention-2 on h100-sxm-80gb at 35%" in a for a in h100_fa2.assumptions)
    assert a100_fa2.step_s.typical == a100_sdpa.step_s.typical
