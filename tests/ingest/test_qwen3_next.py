"""Qwen3-Next (issue 28): the hybrid of Gated DeltaNet linear attention and gated full attention over a 512-expert
MoE, read from the built-in config (data/models/qwen3-next-80b-a3b-instruct.json).

Golden figures: the model card (transformers docs/source/en/model_doc/qwen3_next.md: "80B total parameters, only 3B
active"); the release's safetensors total, 79,674,391,296 (llama.cpp PR 16095's llama-bench prints 79.67 B for the
GGUF; a public parser test of the same architecture, Qwen3-Coder-Next, states 79,674,391,296 total and 3,874,929,408
active: the total minus the inactive experts, the 10 routed + 1 shared, embeddings and head included)."""

import json

import pytest

from sizeup.errors import ConfigError
from sizeup.hardware.catalog import builtin_data_dir
from sizeup.ingest.families.registry import parse_config
from sizeup.ingest.load import load_model
from sizeup.ingest.transformer_ops import Step, transformer_ledger
from sizeup.price.memory import kv_bytes_per_sequence


@pytest.fixture(scope="module")
def arch():
    return load_model("Qwen/Qwen3-Next-80B-A3B-Instruct")


def test_total_parameters_are_the_release_count_and_the_cards_80b(arch):
    assert arch.params == 79_674_391_296  # exact: every tensor the release ships outside the MTP head
    assert arch.params == pytest.approx(80e9, rel=0.01)  # the card's "80B total", within 1%


def test_active_parameters(arch):
    # the card's "3B active" counts neither the 0.62B of embedding and head nor rounds up: 3.87B with them, 3.25B
    # without; both sit within 10% of 3B only without the embeddings, so that is what is held to the card
    assert arch.active_params == 3_874_929_408
    embeddings = 2 * 151_936 * 2048
    assert arch.active_params - embeddings == pytest.approx(3e9, rel=0.10)


def test_layer_kinds_follow_the_interval(arch):
    kinds = ["full" if layer.ssm is None else "linear" for layer in arch.layers]
    assert kinds == (["linear"] * 3 + ["full"]) * 12
    full = arch.layers[3].attention
    assert (full.heads, full.kv_heads, full.head_dim, full.rotary_dim, full.output_gate) == (16, 2, 256, 64, True)
    assert all(layer.mlp.experts == 512 and layer.mlp.top_k == 10 and layer.mlp.shared_gate for layer in arch.layers)


def test_recurrent_state_does_not_grow_and_only_full_layers_cache_tokens(arch):
    s = arch.layers[0].ssm
    # conv over q, k and v (2 x 16 key heads x 128 + 32 value heads x 128) x 4 taps, plus 32 value heads of 128 x 128
    assert s.state_elements == (2 * 16 * 128 + 32 * 128) * 4 + 32 * 128 * 128
    state = 36 * s.state_elements * 2
    per_token = 12 * 2 * 2 * 256 * 2  # 12 full layers x (K + V) x 2 KV heads x 256 x fp16
    for context in (1_000, 100_000):
        assert kv_bytes_per_sequence(arch, context, "fp16") == state + context * per_token


def test_decode_step_prices_the_delta_rule_and_the_gate(arch):
    step = Step(batch=1, new_tokens=1, context=4096)
    ops = transformer_ledger(arch, step).ops
    delta = [o for o in ops if o.op == "gated_delta_rule"]
    assert len(delta) == 36
    assert delta[0].flops == 7 * 4096 * 128  # 7 FLOPs per state element (ssm_ops.DELTA_FLOPS_PER_STATE)
    assert sum(1 for o in ops if o.scope.endswith("output_gate")) == 12
    # q_proj of a gated attention layer emits queries and the gate: twice 16 x 256
    q = next(o for o in ops if o.scope == "model.layers.3.self_attn.q_proj")
    assert q.matmul_flops == 2 * 2048 * 16 * 256 * 2


def test_bad_layer_types_are_refused():
    cfg = json.loads((builtin_data_dir() / "models" / "qwen3-next-80b-a3b-instruct.json").read_text())["config"]
    with pytest.raises(ConfigError, match="layer_types"):
        parse_config({**cfg, "layer_types": ["linear_attention"] * 3}, "bad")
    kinds = ["full_attention"] * 48
    assert all(layer.ssm is None for layer in parse_config({**cfg, "layer_types": kinds}, "all-full").layers)


def test_tensor_parallel_splits_the_delta_net_heads(arch):
    """vLLM shards the Gated DeltaNet by heads (in_proj column-, out_proj row-parallel): each of 4 ranks runs a
    quarter of the recurrence and holds a quarter of the state; its output is all-reduced like attention's."""
    step = Step(batch=1, new_tokens=1, context=4096)
    one, four = (transformer_ledger(arch, step, tp=tp).ops for tp in (1, 4))
    rule = [o.flops for o in four if o.op == "gated_delta_rule"]
    assert rule[0] * 4 == next(o.flops for o in one if o.op == "gated_delta_rule")
    assert sum(1 for o in four if o.op == "all_reduce" and o.scope.endswith(".mixer")) == 36
    state = 36 * arch.layers[0].ssm.state_elements * 2 // 4  # a quarter of the heads' state per rank, fp16
    kv = 4096 * 12 * 1 * (256 + 256) * 2  # 2 KV heads over 4 ranks: one (replicated) per rank
    assert kv_bytes_per_sequence(arch, 4096, "fp16", tp=4) == state + kv


def test_mamba_under_tensor_parallel_is_still_refused():
    cfg = {"model_type": "mamba", "hidden_size": 768, "num_hidden_layers": 2, "vocab_size": 50280}
    with pytest.raises(ConfigError, match="tensor parallel"):
        transformer_ledger(parse_config(cfg, "m"), Step(batch=1, new_tokens=1, context=16), tp=2)
