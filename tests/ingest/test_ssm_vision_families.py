"""The state-space (mamba, mamba2) and vision-language (llava, qwen2_vl) families of issue 16, read from
real config.json files (tests/ingest/configs, sources in SOURCES.md): exact parameters, a recurrent state in
place of the KV cache that does not grow with the context, a decode step whose bytes do not grow with it either, and
one-line errors for missing or contradictory sizes.

Golden parameter counts: what transformers 5.24.0 builds from the same file on the meta device
(`generic.param_inventory`, tied weights once), run once by hand; transformers is not needed here."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sizeup.errors import ConfigError
from sizeup.ingest.families.registry import parse_config
from sizeup.ingest.transformer_ops import Step, transformer_ledger
from sizeup.price.memory import kv_bytes_per_sequence

CONFIGS = Path(__file__).parent / "configs"

GOLDEN = {  # file: (model_type, parameters transformers 5.24.0 builds, layers)
    "mamba-130m-hf": ("mamba", 129_135_360, 24),  # the paper's "130M" model (arXiv:2312.00752, table 3)
    "mamba-2.8b-hf": ("mamba", 2_768_345_600, 64),
    "mamba-codestral-7b-v0.1": ("mamba2", 7_285_403_648, 64),  # Mistral's model card: 7.29B
}


def _config(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


def _arch(name: str, **change):
    return parse_config({**_config(name), **change}, name)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_parameters_equal_what_transformers_builds(name):
    model_type, params, layers = GOLDEN[name]
    arch = _arch(name)
    assert (arch.model_type, arch.params, arch.num_layers) == (model_type, params, layers)
    assert arch.reader == "analytic:mamba" and arch.is_recurrent
    assert {t.role for t in arch.tensors() if ".mixer." in t.name} <= {"ssm", "bias", "norm"}


def test_the_recurrent_state_is_the_conv_window_plus_the_scan_state_and_does_not_grow():
    # mamba-130m: inner = 2 × 768 = 1536; conv window 1536 × 4, scan state 1536 × 16 (d_state), 24 layers
    arch = _arch("mamba-130m-hf")
    per_layer = 1536 * 4 + 1536 * 16
    assert arch.state_elements_per_sequence() == 24 * per_layer
    assert kv_bytes_per_sequence(arch, 512, "fp16") == 24 * per_layer * 2
    assert kv_bytes_per_sequence(arch, 512, "fp16") == kv_bytes_per_sequence(arch, 1_000_000, "fp16")
    # Mamba-2 convolves x, B and C: 8192 + 2 × 8 groups × 128 channels; scan state 128 heads × 64 × 128
    codestral = _arch("mamba-codestral-7b-v0.1")
    assert codestral.state_elements_per_sequence() == 64 * ((8192 + 2 * 8 * 128) * 4 + 8192 * 128)


def test_decode_reads_weights_and_state_not_a_context():
    arch = _arch("mamba-2.8b-hf")
    short = transformer_ledger(arch, Step(batch=4, new_tokens=1, context=1_000), per_layer=False).totals()
    long = transformer_ledger(arch, Step(batch=4, new_tokens=1, context=100_000), per_layer=False).totals()
    assert short.bytes_read == long.bytes_read and short.flops == long.flops
    # the weights (bf16) and the batch's state (read once, fp16) are most of what a decode step reads
    floor = 2 * arch.params + 4 * kv_bytes_per_sequence(arch, 1, "fp16")
    assert floor <= short.bytes_read < 1.05 * floor


def test_prefill_flops_are_linear_in_the_prompt():
    arch = _arch("mamba-130m-hf")
    one = transformer_ledger(arch, Step(batch=1, new_tokens=1_000, context=1_000), per_layer=False).totals().flops
    four = transformer_ledger(arch, Step(batch=1, new_tokens=4_000, context=4_000), per_layer=False).totals().flops
    assert four == pytest.approx(4 * one, rel=0.02)


BAD = [
    ("mamba-130m-hf", {"hidden_size": None, "d_model": None}, "missing field 'hidden_size'"),
    ("mamba-130m-hf", {"intermediate_size": 2048},
     "field 'intermediate_size' = 2,048: expected expand × hidden_size = 1,536"),
    ("mamba-130m-hf", {"state_size": 0}, "field 'state_size' = 0: expected a positive integer"),
    ("mamba-130m-hf", {"time_step_rank": "big"}, "field 'time_step_rank' = 'big'"),
    ("mamba-codestral-7b-v0.1", {"num_heads": 100},
     "field 'num_heads' = 100: expected num_heads × head_dim (100 × 64) to equal expand × hidden_size = 8,192"),
    ("mamba-codestral-7b-v0.1", {"n_groups": 3}, "n_groups = 3 must divide num_heads = 128"),
]


@pytest.mark.parametrize("name, change, message", BAD)
def test_missing_or_contradictory_sizes_are_one_line_errors(name, change, message):
    with pytest.raises(ConfigError) as e:
        _arch(name, **change)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_cli_refuses_a_contradictory_mamba_config_in_one_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**_config("mamba-130m-hf"), "intermediate_size": 2048}))
    run = subprocess.run([sys.executable, "-m", "sizeup", "estimate", str(path), "--device", "a100-80gb"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.strip().count("\n") == 0 and "intermediate_size" in run.stderr


def test_cli_refuses_tensor_parallel_mamba_in_one_line():
    run = subprocess.run([sys.executable, "-m", "sizeup", "estimate", str(CONFIGS / "mamba-2.8b-hf.json"),
                          "--device", "a100-80gb", "--gpus", "2"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and "not modelled" in run.stderr and "Traceback" not in run.stderr


def test_llava_counts_the_clip_tower_and_the_projector_exactly():
    """LLaVA-1.5-7B: Vicuna-7B (LlamaConfig defaults, vocab 32064) + CLIP ViT-L/14-336 + a 2-layer projector;
    transformers 5.24.0 builds 7,063,427,072 parameters from the same file (vision 303,507,456, projector
    20,979,712)."""
    arch = parse_config(json.loads((CONFIGS / "llava-1.5-7b-hf.json").read_text()), "llava")
    by_role = {}
    for t in arch.tensors():
        by_role[t.role] = by_role.get(t.role, 0) + t.numel
    assert (arch.params, by_role["vision"], by_role["projector"]) == (7_063_427_072, 303_507_456, 20_979_712)
    assert arch.reader == "analytic:llava" and arch.hidden == 4096 and arch.num_layers == 32
    assert any("576 prompt tokens" in a for a in arch.assumptions)  # (336 / 14)² patches, CLS dropped


def test_llava_with_an_unknown_vision_tower_is_refused_in_one_line():
    data = json.loads((CONFIGS / "llava-1.5-7b-hf.json").read_text())
    data["vision_config"]["model_type"] = "siglip_vision_model"
    with pytest.raises(ConfigError, match="expected 'clip_vision_model'"):
        parse_config(data, "llava")
    data["vision_config"] = {**data["vision_config"], "model_type": "clip_vision_model", "patch_size": 400}
    with pytest.raises(ConfigError, match="patch_size = 400 is more than image_size = 336"):
        parse_config(data, "llava")


def test_llava_top_level_vocab_size_is_checked_and_a_different_one_said():
    """llava-1.5-7b-hf repeats its text model's vocab_size (32064) at the top, which transformers does not build
    from: an absurd one there is refused, a different one is said in the assumptions, not silently ignored."""
    data = json.loads((CONFIGS / "llava-1.5-7b-hf.json").read_text())
    arch = parse_config(data, "llava")
    assert arch.vocab == 32064 and not any("top-level vocab_size" in a for a in arch.assumptions)
    other = parse_config({**data, "vocab_size": 32000}, "llava")
    assert other.vocab == 32064 and other.params == arch.params
    assert any("top-level vocab_size (32,000) differs from text_config's (32,064)" in a for a in other.assumptions)
    with pytest.raises(ConfigError, match="vocab_size.*expected at most"):
        parse_config({**data, "vocab_size": 2**64 + 1}, "llava")


def test_qwen2_vl_counts_the_vision_tower_and_merger_exactly():
    """Qwen2-VL-7B: transformers 5.24.0 builds 8,291,375,616 parameters from the same file; 256 tokens per
    448 × 448 image ((448 / 14)² patches, 2 × 2 merged)."""
    arch = parse_config(json.loads((CONFIGS / "qwen2-vl-7b-instruct.json").read_text()), "qwen2-vl")
    assert (arch.params, arch.reader, arch.hidden, arch.num_layers) == (8_291_375_616, "analytic:qwen2_vl", 3584, 28)
    assert any("256 for 448 × 448" in a for a in arch.assumptions)


@pytest.mark.parametrize("change, message", [
    ({"hidden_size": 4096}, "field 'hidden_size' = 4,096: expected the language model's hidden size 3,584"),
    ({"num_heads": 7}, "num_heads = 7 must divide embed_dim = 1,280"),
    ({"mlp_ratio": "4"}, "field 'mlp_ratio' = '4': expected a number above 0"),
    ({"depth": None}, "missing field 'depth'"),
])
def test_qwen2_vl_with_bad_vision_sizes_is_refused_in_one_line(change, message):
    data = json.loads((CONFIGS / "qwen2-vl-7b-instruct.json").read_text())
    data["vision_config"] = {**data["vision_config"], **change}
    with pytest.raises(ConfigError) as e:
        parse_config(data, "qwen2-vl")
    assert message in str(e.value) and "\n" not in str(e.value)
