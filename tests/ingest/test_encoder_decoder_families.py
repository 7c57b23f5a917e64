"""The encoder-decoder families of issue 16 (t5 incl. v1.1 / FLAN-T5, whisper), read from real config.json
files (tests/ingest/configs, sources in SOURCES.md): exact parameters, a decoder cache of self-attention
K/V that grows with the output plus cross-attention K/V fixed by the encoder length, and one-line errors.

Golden parameter counts: what transformers 5.24.0 builds from the same file on the meta device
(`generic.param_inventory`), run once by hand; transformers is not needed here."""

import json
from pathlib import Path

import pytest

from sizeup.errors import ConfigError
from sizeup.ingest.families.registry import parse_config
from sizeup.ingest.transformer_ops import Step, transformer_ledger
from sizeup.price.memory import kv_bytes_per_sequence

CONFIGS = Path(__file__).parent / "configs"


def _arch(name: str, **change):
    return parse_config({**json.loads((CONFIGS / f"{name}.json").read_text()), **change}, name)


@pytest.mark.parametrize("name, params", [("whisper-tiny", 37_760_640), ("whisper-small", 241_734_912)])
def test_whisper_parameters_equal_what_transformers_builds(name, params):
    arch = _arch(name)
    assert (arch.params, arch.reader, arch.cross_source) == (params, "analytic:whisper", 1500)


def test_flan_t5_counts_its_untied_lm_head_beside_what_transformers_builds():
    """transformers 5.24 builds 2,783,959,040 from flan-t5-xl's file because it ties every T5 LM head to the
    shared embedding; the checkpoint stores lm_head.weight apart (tie_word_embeddings false): 32128 × 2048 more."""
    arch = _arch("flan-t5-xl")
    assert arch.params == 2_783_959_040 + 32128 * 2048
    assert _arch("flan-t5-xl", tie_word_embeddings=True).params == 2_783_959_040
    assert arch.layers[0].mlp.gated and arch.num_layers == 24 and arch.cross_source == 512


def test_the_cross_attention_cache_is_fixed_and_the_self_attention_cache_grows():
    arch = _arch("whisper-small")  # 12 decoder layers, 768 wide, 1500 encoder frames
    cross = 12 * 1500 * 2 * 768 * 2
    per_token = 12 * 2 * 768 * 2
    assert kv_bytes_per_sequence(arch, 1, "fp16") == cross + per_token
    assert kv_bytes_per_sequence(arch, 101, "fp16") == cross + 101 * per_token


def test_decode_reads_the_cross_attention_cache_every_step():
    arch = _arch("whisper-small")
    decode = transformer_ledger(arch, Step(batch=4, new_tokens=1, context=10), per_layer=True)
    cross = [o for o in decode.ops if o.scope.endswith("cross_attn") and o.op == "attention"]
    assert len(cross) == 12
    assert all(o.bytes_read >= 4 * 1500 * 2 * 768 * 2 for o in cross)  # the batch's cross K/V, fp16


BAD = [
    ("flan-t5-xl", {"feed_forward_proj": "double-gated-gelu"}, "field 'feed_forward_proj' = 'double-gated-gelu'"),
    ("flan-t5-xl", {"d_model": None}, "missing field 'd_model'"),
    ("flan-t5-xl", {"num_heads": 0}, "field 'num_heads' = 0: expected a positive integer"),
    ("whisper-small", {"decoder_attention_heads": 7}, "decoder_attention_heads = 7 must divide d_model = 768"),
    ("whisper-small", {"max_source_positions": None}, "missing field 'max_source_positions'"),
    ("whisper-small", {"num_mel_bins": "80"}, "field 'num_mel_bins' = '80'"),
]


@pytest.mark.parametrize("name, change, message", BAD)
def test_missing_or_contradictory_sizes_are_one_line_errors(name, change, message):
    with pytest.raises(ConfigError) as e:
        _arch(name, **change)
    assert message in str(e.value) and "\n" not in str(e.value)
