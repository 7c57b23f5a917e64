"""The encoder families (roberta / xlm-roberta, distilbert, deberta-v2, modernbert, and bert) on real
config.json files: parameter counts equal what transformers builds.

Golden values: `sum(p.numel() for p in model.parameters())` of the base model class (BertModel,
XLMRobertaModel, RobertaModel, DistilBertModel, DebertaV2Model, ModernBertModel) that transformers 5.24.0
builds on the meta device from the same file (the task heads the files' `architectures` name are not
counted: each family reads the base model). tests/ingest/test_analytic_vs_transformers.py rebuilds them
with the installed transformers.
"""

import json
from pathlib import Path

import pytest

from sizeup.errors import ConfigError
from sizeup.ingest.families.registry import parse_config
from sizeup.ingest.load import load_model

CONFIGS = Path(__file__).parent / "configs"

GOLDEN = {  # file -> (reader, parameters of the base model, transformers 5.24.0)
    "bert-large-uncased.json": ("analytic:bert", 335_141_888),
    "bge-m3.json": ("analytic:roberta", 567_754_752),
    "roberta-base.json": ("analytic:roberta", 124_645_632),
    "distilbert-base-uncased.json": ("analytic:distilbert", 66_362_880),
    "deberta-v3-base.json": ("analytic:deberta_v2", 183_831_552),
    "modernbert-large-zeroshot-v2.0.json": ("analytic:modernbert", 394_781_696),
}


def config(name: str) -> dict:
    return json.loads((CONFIGS / name).read_text())


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_real_encoder_configs_count_what_transformers_builds(name):
    reader, params = GOLDEN[name]
    arch = load_model(str(CONFIGS / name))
    assert (arch.reader, arch.params) == (reader, params)
    assert arch.encoder and not arch.lm_head and all(not layer.attention.causal for layer in arch.layers)


def test_bge_m3_is_no_longer_read_as_a_decoder():
    """Issue 16: BGE-M3 came out 61% off when xlm-roberta fell to the LLaMA-style guess."""
    arch = load_model(str(CONFIGS / "bge-m3.json"))
    assert arch.model_type == "xlm-roberta" and arch.pooler and arch.positions == 8194 and arch.type_vocab == 1


@pytest.mark.parametrize("change, params", [  # DebertaV2Model built by transformers 5.24.0 from the changed file
    ({"share_att_key": False}, 198_005_760),  # + position key and query projections in every layer
    ({"share_att_key": False, "pos_att_type": "c2p"}, 190_918_656),  # key projections only
    ({"relative_attention": False, "position_biased_input": True, "type_vocab_size": 2}, 183_833_088),
    ({"position_buckets": -1, "max_relative_positions": 128}, 183_634_944),  # 2 × 128 relative embeddings
    ({"conv_kernel_size": 3}, 185_603_328),  # DeBERTa-v2's convolution after the first layer
])
def test_deberta_v2_relative_positions(change, params):
    assert parse_config({**config("deberta-v3-base.json"), **change}).params == params


def test_deberta_v2_refuses_an_unknown_attention_type():
    with pytest.raises(ConfigError, match="'pos_att_type' = 'c2x': expected 'c2p', 'p2c' or 'p2p'"):
        parse_config({**config("deberta-v3-base.json"), "share_att_key": False, "pos_att_type": "c2x"})


def test_modernbert_biases_and_windows():
    base = config("modernbert-large-zeroshot-v2.0.json")
    biased = parse_config({**base, "norm_bias": True, "attention_bias": True, "mlp_bias": True})
    assert biased.params == 395_130_368  # ModernBertModel, transformers 5.24.0
    arch = parse_config(base)
    windows = [layer.attention.window for layer in arch.layers]
    assert windows[:4] == [None, 128, 128, None] and windows.count(None) == 10  # global every 3rd of 28
    assert arch.layers[0].norms == 1 and arch.layers[1].norms == 2 and arch.layers[0].mlp.gated


def test_distilbert_reads_its_own_field_names():
    arch = parse_config(config("distilbert-base-uncased.json"))
    assert (arch.hidden, arch.num_layers, arch.layers[0].mlp.intermediate, arch.layers[0].attention.heads) == \
        (768, 6, 3072, 12)
    assert parse_config({**config("distilbert-base-uncased.json"), "sinusoidal_pos_embds": True}).params == 66_362_880
    with pytest.raises(ConfigError, match="missing field 'n_layers'"):  # an explicit null stays null
        parse_config({**config("distilbert-base-uncased.json"), "n_layers": None})
    # left out: DistilBertConfig's default (6 layers), named in the assumptions
    arch = parse_config({k: v for k, v in config("distilbert-base-uncased.json").items() if k != "n_layers"})
    assert arch.num_layers == 6 and any(a.startswith("filled from DistilBertConfig defaults") and "n_layers=6" in a
                                        for a in arch.assumptions)
