"""The analytic transformer ledger: agrees op for op with a traced torch implementation of the same
tiny config, and its attention and MoE arithmetic holds."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sizeup.errors import ConfigError
from sizeup.ingest.hf_config import load_model, parse_config
from sizeup.ingest.transformer_ops import Step, attention_pairs, transformer_ledger
from sizeup.ledger import OpKind

TINY = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 176, "num_hidden_layers": 2,
        "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 96, "tie_word_embeddings": False}


def tiny_llama(torch):
    """A LLaMA written with Hugging Face module names, for the cross-check."""
    nn, F = torch.nn, torch.nn.functional
    h, heads, kv, inter = 64, 8, 2, 176
    d = h // heads

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = nn.Linear(h, heads * d, bias=False)
            self.k_proj = nn.Linear(h, kv * d, bias=False)
            self.v_proj = nn.Linear(h, kv * d, bias=False)
            self.o_proj = nn.Linear(heads * d, h, bias=False)

        def forward(self, x):
            b, s, _ = x.shape
            q = self.q_proj(x).view(b, s, heads, d).transpose(1, 2)
            k = self.k_proj(x).view(b, s, kv, d).transpose(1, 2)
            v = self.v_proj(x).view(b, s, kv, d).transpose(1, 2)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            return self.o_proj(o.transpose(1, 2).reshape(b, s, h))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate_proj = nn.Linear(h, inter, bias=False)
            self.up_proj = nn.Linear(h, inter, bias=False)
            self.down_proj = nn.Linear(inter, h, bias=False)

        def forward(self, x):
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_layernorm = nn.RMSNorm(h)
            self.self_attn = Attention()
            self.post_attention_layernorm = nn.RMSNorm(h)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.self_attn(self.input_layernorm(x))
            return x + self.mlp(self.post_attention_layernorm(x))

    class Inner(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_tokens = nn.Embedding(96, h)
            self.layers = nn.ModuleList(Layer() for _ in range(2))
            self.norm = nn.RMSNorm(h)

        def forward(self, ids):
            x = self.embed_tokens(ids)
            for layer in self.layers:
                x = layer(x)
            return self.norm(x)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = Inner()
            self.lm_head = nn.Linear(h, 96, bias=False)

        def forward(self, ids):
            return self.lm_head(self.model(ids))

    return Model


def matmul_by_scope(ledger, kinds=(OpKind.MATMUL, OpKind.ATTENTION)):
    out = {}
    for o in ledger.ops:
        if o.kind in kinds and o.matmul_flops:
            out[o.scope] = out.get(o.scope, 0) + o.matmul_flops * o.count
    return out


def test_analytic_ledger_equals_traced_ledger_op_for_op(torch):
    from sizeup.ingest.torch_trace import InputSpec, trace_module

    model = tiny_llama(torch)
    traced = trace_module(model, [InputSpec(shape=(2, 16), dtype="int64")], dtype="fp32")
    analytic = transformer_ledger(parse_config(TINY), Step(batch=2, new_tokens=16, context=16, causal_blocks="full",
                                                           logits="all"), weights="fp32", act_dtype="fp32")
    t_scopes, a_scopes = matmul_by_scope(traced), matmul_by_scope(analytic)
    assert t_scopes == a_scopes
    assert len(a_scopes) == 2 * 8 + 1  # 7 linears + attention per layer, and the LM head
    t_attn = [o for o in traced.ops if o.kind == OpKind.ATTENTION]
    a_attn = [o for o in analytic.ops if o.kind == OpKind.ATTENTION]
    assert [o.flops for o in t_attn] == [o.flops for o in a_attn]  # products and softmax alike
    assert traced.params == parse_config(TINY).params


@given(new=st.integers(1, 64), prefix=st.integers(0, 64), window=st.one_of(st.none(), st.integers(1, 80)))
def test_attention_pairs_closed_form_matches_counting(new, prefix, window):
    context = prefix + new
    brute = sum(min(prefix + j, window or 10**9) for j in range(1, new + 1))
    assert attention_pairs(new, context, window, True, True) == brute


def test_prefill_flops_are_two_per_parameter_per_token_plus_attention():
    arch = load_model("llama-3-8b")
    s = 1024
    ledger = transformer_ledger(arch, Step(batch=1, new_tokens=s, context=s, logits="all"))
    norms = (2 * 32 + 1) * 4096
    weights = arch.params - arch.vocab * arch.hidden - norms  # the embedding is a lookup; norms are vector work
    attention = 32 * 2 * 2 * 32 * 128 * (s * (s + 1) // 2)  # causal triangle, Q·Kᵀ and P·V
    assert ledger.totals().matmul_flops == 2 * s * weights + attention


def test_decode_reads_the_weights_once_and_the_cache():
    arch = load_model("llama-3-8b")
    one = transformer_ledger(arch, Step(batch=1, new_tokens=1, context=4096))
    eight = transformer_ledger(arch, Step(batch=8, new_tokens=1, context=4096))
    assert eight.totals().matmul_flops == pytest.approx(8 * one.totals().matmul_flops, rel=1e-9)
    kv_read = 131_072 * 4096  # bytes per token · context
    assert eight.totals().bytes_read - one.totals().bytes_read == pytest.approx(7 * kv_read, rel=0.02)


def test_decode_attention_states_its_kv_cache_read_and_prefill_does_not():
    """A decode step's attention op names the KV cache it streams (`weight_bytes`, priced at the decode attention
    kernel's bandwidth share); a prefill's attention reads no cache of its own and states none."""
    arch = load_model("llama-3-8b")
    decode = [o for o in transformer_ledger(arch, Step(batch=8, new_tokens=1, context=4096)).ops
              if o.kind == OpKind.ATTENTION]
    assert decode and all(o.weight_bytes == 8 * 4096 * 131_072 // 32 for o in decode)  # per layer: K and V, bf16
    prefill = [o for o in transformer_ledger(arch, Step(batch=1, new_tokens=512, context=512)).ops
               if o.kind == OpKind.ATTENTION]
    assert prefill and all(o.weight_bytes == 0 for o in prefill)


def test_moe_decode_reads_only_the_routed_experts():
    arch = load_model("mixtral-8x7b")
    ledger = transformer_ledger(arch, Step(batch=1, new_tokens=1, context=128), weights="bf16")
    expert_bytes = sum(o.bytes_read for o in ledger.ops if o.op == "grouped_linear")
    all_experts = 32 * 8 * 3 * 4096 * 14336 * 2
    assert expert_bytes == pytest.approx(all_experts * 2 / 8, rel=0.01)  # top-2 of 8


def test_moe_prefill_states_the_expert_weights_apart_from_the_token_rows():
    arch = load_model("mixtral-8x7b")
    ledger = transformer_ledger(arch, Step(batch=1, new_tokens=4096, context=4096), weights="bf16")
    experts = [o for o in ledger.ops if o.op == "grouped_linear"]
    all_experts = 32 * 8 * 3 * 4096 * 14336 * 2  # 4096 tokens x top-2 touch every expert
    assert sum(o.weight_bytes * o.count for o in experts) == pytest.approx(all_experts, rel=0.01)
    assert all(o.weight_bytes < o.bytes_read for o in experts)  # each also reads its routed tokens' rows


def test_mla_decode_attends_in_the_latent_space():
    arch = load_model("deepseek-v3")
    ledger = transformer_ledger(arch, Step(batch=1, new_tokens=1, context=1000))
    attn = [o for o in ledger.ops if o.kind == OpKind.ATTENTION]
    per_layer_cache = 1000 * (512 + 64) * 2
    assert all(o.bytes_read >= per_layer_cache for o in attn) and len(attn) == 61


def test_attention_data_parallel_runs_attention_whole_on_a_ranks_own_sequences():
    arch = load_model("qwen3-235b-a22b")  # 64 heads, 4 KV heads: at TP 8 each KV head sits on two ranks
    step = Step(batch=64, new_tokens=1, context=2048)
    tp = transformer_ledger(arch, step, weights="fp8", kv_dtype="fp8", tp=8, per_layer=False)
    dp = transformer_ledger(arch, step, weights="fp8", kv_dtype="fp8", tp=8, ranks=8, per_layer=False)

    def total(ledger, op, field="bytes_read"):
        return sum(getattr(o, field) * o.count for o in ledger.ops if o.op == op)

    # attention: 8 of the 64 sequences with all 4 KV heads, against all 64 with 1 KV head: half the cache read
    kv = 2048 * 128 * 2 * 94  # bytes a sequence's KV head holds over the layers (fp8)
    assert total(tp, "attention") - total(dp, "attention") == pytest.approx((64 - 8 * 4) * kv, rel=0.02)
    assert total(dp, "attention", "flops") == pytest.approx(total(tp, "attention", "flops"), rel=1e-9)
    # the routed experts: every rank's tokens, split 8 ways, as under tensor parallelism
    assert total(dp, "grouped_linear", "flops") == total(tp, "grouped_linear", "flops")
    assert total(dp, "grouped_linear", "weight_bytes") == total(tp, "grouped_linear", "weight_bytes")
    # no all-reduce: an all-gather of the 64 tokens' hidden states before the experts, a reduce-scatter after
    assert total(dp, "all_reduce", "bytes_written") == 0
    size = 64 * arch.hidden * 2
    gathers = [o for o in dp.ops if o.op == "all_gather" and o.scope.endswith("experts")]
    scatters = [o for o in dp.ops if o.op == "reduce_scatter"]
    assert sum(o.count for o in gathers) == sum(o.count for o in scatters) == 94
    assert {o.bytes_written for o in gathers} == {size} and {o.bytes_read for o in scatters} == {size}
    # the attention projections' weights whole on the rank, over its own 8 tokens
    q_tp = next(o for o in tp.ops if o.scope.endswith("q_proj"))
    q_dp = next(o for o in dp.ops if o.scope.endswith("q_proj"))
    assert q_dp.matmul_flops == q_tp.matmul_flops and q_dp.bytes_read > 7 * (q_tp.bytes_read - 64 * 4096 * 2)


def test_attention_data_parallel_gives_the_busiest_rank_and_needs_every_gpu_a_rank():
    arch = load_model("qwen3-30b-a3b")
    one = transformer_ledger(arch, Step(batch=1, new_tokens=512, context=512), tp=4, ranks=4, per_layer=False)
    whole = transformer_ledger(arch, Step(batch=1, new_tokens=512, context=512), per_layer=False)
    attn = [sum(o.flops * o.count for o in led.ops if o.kind == OpKind.ATTENTION) for led in (one, whole)]
    assert attn[0] == attn[1]  # one prompt: the rank that holds it attends it whole
    with pytest.raises(ConfigError):
        transformer_ledger(arch, Step(batch=4, new_tokens=1, context=64), tp=4, ranks=2)
