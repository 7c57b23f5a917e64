"""The eager-kernel activation rules checked against PyTorch's autograd: one decoder layer written the way
transformers and litgpt write theirs (RMSNorm computed in fp32, RoPE, K/V repeated to the query heads,
scaled_dot_product_attention, a reshaped attention output into o_proj, a gated MLP), run in bf16 on the
CPU, with every tensor autograd keeps for backward counted once."""

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from sizeup.ingest.hf_config import parse_config  # noqa: E402
from sizeup.workload.finetune import FinetuneSpec  # noqa: E402
from sizeup.workload.training import TrainingConfig  # noqa: E402
from sizeup.workload.training.activations import (adapter_activation_bytes, eager_activation_bytes,  # noqa: E402
                                                  layer_activation_bytes)
from tests.workload.saved_storage import saved_storages  # noqa: E402

B, S, H, HEADS, INTER, RANK = 2, 16, 64, 4, 172, 4
HD = H // HEADS


def arch(kv_heads: int):
    return parse_config({"model_type": "llama", "hidden_size": H, "num_attention_heads": HEADS,
                         "num_key_value_heads": kv_heads, "intermediate_size": INTER, "num_hidden_layers": 1,
                         "vocab_size": 128, "max_position_embeddings": 64})


class RMSNorm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(H, dtype=torch.bfloat16))

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        return (x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5)).to(dtype) * self.weight


def linear(i, o):
    return torch.nn.Linear(i, o, bias=False, dtype=torch.bfloat16)


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin


def saved_bytes(kv_heads: int, *, frozen: bool, fused_qkv: bool = False, adapter_qv: bool = False,
                dropout: float = 0.0) -> int:
    """Bytes of the distinct non-parameter, non-constant storages autograd keeps for one layer's backward."""
    torch.manual_seed(0)
    norm1, norm2 = RMSNorm(), RMSNorm()
    kv = kv_heads * HD
    qkv = linear(H, H + 2 * kv)
    o, gate, up, down = linear(H, H), linear(H, INTER), linear(H, INTER), linear(INTER, H)
    lora_a = torch.nn.Parameter(torch.randn(RANK, H, dtype=torch.bfloat16))
    lora_b = torch.nn.Parameter(torch.randn(H + 2 * kv, RANK, dtype=torch.bfloat16))
    modules = (norm1, norm2, qkv, o, gate, up, down)
    for m in modules:
        m.weight.requires_grad_(not frozen)
    pos = torch.arange(S, dtype=torch.float32)[:, None] / 10000 ** (torch.arange(HD // 2) / (HD // 2))
    cos = torch.cat((pos.cos(), pos.cos()), -1).to(torch.bfloat16)
    sin = torch.cat((pos.sin(), pos.sin()), -1).to(torch.bfloat16)
    ignored = {p.untyped_storage().data_ptr() for m in modules for p in m.parameters()}
    ignored |= {t.untyped_storage().data_ptr() for t in (lora_a, lora_b, cos, sin)}
    x = torch.randn(B, S, H, dtype=torch.bfloat16, requires_grad=True)
    # activations lead with the batch (or batch × sequence); weights and constants do not
    with saved_storages(ignored, keep=lambda t: t.dim() >= 2 and t.shape[0] in (B, B * S)) as kept:
        h = norm1(x)
        if fused_qkv:
            out = qkv(h)
            if adapter_qv:  # one adapter over the fused product's input, as litgpt's LoRAQKVLinear
                out = out + (F.dropout(h, dropout, training=True) @ lora_a.t()) @ lora_b.t()
            q, k, v = out.split((H, kv, kv), dim=-1)
        else:  # separate products: slices of one weight stand in for q_proj, k_proj, v_proj
            w = qkv.weight
            q, k, v = F.linear(h, w[:H]), F.linear(h, w[H:H + kv]), F.linear(h, w[H + kv:])
        q = q.view(B, S, HEADS, HD).transpose(1, 2)
        k = k.view(B, S, kv_heads, HD).transpose(1, 2)
        v = v.view(B, S, kv_heads, HD).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        if kv_heads != HEADS:
            k = k.repeat_interleave(HEADS // kv_heads, dim=1)
            v = v.repeat_interleave(HEADS // kv_heads, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x2 = x + o(y.transpose(1, 2).reshape(B, S, H))
        h2 = norm2(x2)
        out = x2 + down(F.silu(gate(h2)) * up(h2))
        out.float().sum().backward()
    return sum(kept.values())


def small_terms(adapter_inputs: int = 0) -> int:
    """What neither count includes: the fp32 log-sum-exp of the attention (per head and position) and each
    RMSNorm's fp32 reciprocal root (per position); each adapter's rank-wide x·Aᵀ (bf16) is in sizeup's adapter
    term. On the CPU dropout keeps its scaled mask in the input's dtype (2 bytes), where CUDA's fused kernel
    keeps 1 byte."""
    tokens = B * S
    return 4 * tokens * HEADS + 2 * 4 * tokens + adapter_inputs * tokens * H


def predicted(a, spec: FinetuneSpec) -> int:
    cfg = TrainingConfig(finetune=spec, seq=S, micro_batch=B, kernels="eager")
    layer = a.layers[0]
    return (layer_activation_bytes(a, layer, B, S) + adapter_activation_bytes(a, layer, cfg, B)
            + eager_activation_bytes(a, layer, cfg, B, "none"))


def test_full_training_grouped_query_layer():
    a = arch(kv_heads=2)
    assert saved_bytes(2, frozen=False) == predicted(a, FinetuneSpec(method="full")) + small_terms()


def test_full_training_multi_head_layer():
    a = arch(kv_heads=HEADS)
    assert saved_bytes(HEADS, frozen=False) == predicted(a, FinetuneSpec(method="full")) + small_terms()


def test_lora_fused_qkv_multi_head_layer_keeps_the_qkv_output_through_v():
    a = arch(kv_heads=HEADS)
    spec = FinetuneSpec(method="lora", rank=RANK, targets=("q_proj", "v_proj"), dropout=0.05, fused_qkv=True)
    measured = saved_bytes(HEADS, frozen=True, fused_qkv=True, adapter_qv=True, dropout=0.05)
    assert measured == predicted(a, spec) + small_terms(adapter_inputs=1)


def test_lora_fused_qkv_grouped_query_layer():
    a = arch(kv_heads=2)
    spec = FinetuneSpec(method="lora", rank=RANK, targets=("q_proj", "v_proj"), dropout=0.05, fused_qkv=True)
    measured = saved_bytes(2, frozen=True, fused_qkv=True, adapter_qv=True, dropout=0.05)
    assert measured == predicted(a, spec) + small_terms(adapter_inputs=1)
