"""Gemma 3 and Mistral 3 read with their vision towers (ingest/families/gemma3_vl.py, mistral3.py): the branches
the real configs under tests/ingest/configs do not reach (SigLIP's attention-pooling head, a projector with
biases over two feature layers, a tied wrapper, a config without vision_config) equal transformers' build,
and a bad field is a one-line error naming it."""

import copy

import pytest

from sizeup.errors import ConfigError
from sizeup.ingest import generic
from sizeup.ingest.families.registry import parse_config

TEXT = {"hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 1, "head_dim": 64, "vocab_size": 1000}
VISION = {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
          "image_size": 224, "patch_size": 14}
GEMMA3 = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "mm_tokens_per_image": 16,
          "text_config": TEXT, "vision_config": {**VISION, "model_type": "siglip_vision_model"}}
MISTRAL3 = {"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3", "text_config": TEXT,
            "vision_config": {**VISION, "model_type": "pixtral"}}


def _with(config: dict, **changes) -> dict:
    out = copy.deepcopy(config)
    out.update(changes)
    return out


CASES = {
    "siglip head": _with(GEMMA3, vision_config={**GEMMA3["vision_config"], "vision_use_head": True}),
    "siglip defaults": _with(GEMMA3, vision_config=None, mm_tokens_per_image=196),  # SigLIP's 224 / 16 default
    "projector biases, two feature layers": _with(MISTRAL3, tie_word_embeddings=False, multimodal_projector_bias=True,
                                                  vision_feature_layer=[-1, -2]),
    "tied wrapper": _with(MISTRAL3, tie_word_embeddings=True),
}


@pytest.mark.parametrize("name", CASES)
def test_the_vision_branches_equal_what_transformers_builds(name):
    if not generic.transformers_available():
        pytest.skip("transformers is not installed: the cross-check needs it")
    config = CASES[name]
    arch = parse_config(copy.deepcopy(config), name)
    assert arch.params == generic.param_inventory(copy.deepcopy(config), where=name, head=None).params


def test_the_towers_are_counted_and_said_so():
    gemma, mistral = parse_config(copy.deepcopy(GEMMA3), "g"), parse_config(copy.deepcopy(MISTRAL3), "m")
    assert gemma.tower.variant == "siglip" and gemma.tower.feature_tokens == 16
    assert any("each image adds 16 prompt tokens" in a for a in gemma.assumptions)
    assert mistral.tower.variant == "pixtral" and mistral.tower.max_image_side == 224
    assert any("Pixtral vision tower (2 layers) and the projector are counted" in a for a in mistral.assumptions)
    assert all("not counted" not in a for a in gemma.assumptions + mistral.assumptions)


@pytest.mark.parametrize("config, message", [
    (_with(GEMMA3, mm_tokens_per_image=15), "field 'mm_tokens_per_image' = 15: expected a square whose side divides"),
    (_with(GEMMA3, vision_config={**VISION, "model_type": "clip_vision_model"}),
     "field 'model_type' = 'clip_vision_model': expected 'siglip_vision_model'"),
    (_with(MISTRAL3, vision_config={**VISION, "model_type": "siglip_vision_model"}),
     "field 'model_type' = 'siglip_vision_model': expected 'pixtral'"),
    (_with(GEMMA3, text_config=None), "missing field 'text_config'"),
])
def test_a_bad_field_is_one_line(config, message):
    with pytest.raises(ConfigError) as err:
        parse_config(config, "bad")
    assert message in str(err.value) and "\n" not in str(err.value)
