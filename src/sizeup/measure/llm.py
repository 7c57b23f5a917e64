"""A decoder built from a preset's architecture with random weights (no download), measured for
prefill (time to first token) and decode (time per output token with a KV cache).

Covers the LLaMA-style families (llama, mistral, qwen2, qwen3, phi3 and unknown types read as LLaMA):
RMSNorm, rotary embeddings, grouped-query attention through SDPA, SwiGLU MLP, tied or separate head.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from sizeup.errors import MeasureError
from sizeup.ingest.hf_config import ModelArch

__all__ = ["Decoder", "build_decoder", "SUPPORTED_TYPES"]

SUPPORTED_TYPES = ("llama", "mistral", "qwen2", "qwen3", "phi3")


class _Layer(nn.Module):
    def __init__(self, arch: ModelArch, index: int) -> None:
        super().__init__()
        spec = arch.layers[index]
        a, m, h = spec.attention, spec.mlp, arch.hidden
        self.heads, self.kv_heads, self.head_dim = a.heads, a.kv_heads, a.head_dim
        self.input_layernorm = nn.RMSNorm(h)
        self.q_proj = nn.Linear(h, a.heads * a.head_dim, bias=a.qkv_bias)
        self.k_proj = nn.Linear(h, a.kv_heads * a.head_dim, bias=a.qkv_bias)
        self.v_proj = nn.Linear(h, a.kv_heads * a.head_dim, bias=a.qkv_bias)
        self.o_proj = nn.Linear(a.heads * a.head_dim, h, bias=a.o_bias)
        self.q_norm = nn.RMSNorm(a.head_dim) if a.qk_norm else None
        self.k_norm = nn.RMSNorm(a.head_dim) if a.qk_norm else None
        self.post_attention_layernorm = nn.RMSNorm(h)
        self.gate_proj = nn.Linear(h, m.intermediate, bias=False)
        self.up_proj = nn.Linear(h, m.intermediate, bias=False)
        self.down_proj = nn.Linear(m.intermediate, h, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, cache: list | None) -> torch.Tensor:
        b, s, _ = x.shape
        y = self.input_layernorm(x)
        q = self.q_proj(y).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(y).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(y).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = _rope(q, cos, sin), _rope(k, cos, sin)
        if cache is not None:
            if cache[0] is not None:
                k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
            cache[0], cache[1] = k, v
        o = F.scaled_dot_product_attention(q, k, v, is_causal=s > 1 and s == k.shape[2], enable_gqa=True)
        x = x + self.o_proj(o.transpose(1, 2).reshape(b, s, -1))
        y = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(y)) * self.up_proj(y))


def _rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class Decoder(nn.Module):
    def __init__(self, arch: ModelArch) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(arch.vocab, arch.hidden)
        self.layers = nn.ModuleList(_Layer(arch, i) for i in range(arch.num_layers))
        self.norm = nn.RMSNorm(arch.hidden)
        self.lm_head = nn.Linear(arch.hidden, arch.vocab, bias=False)
        if arch.tie_embeddings:
            self.lm_head.weight = self.embed_tokens.weight
        self.head_dim = arch.layers[0].attention.head_dim

    def _tables(self, start: int, length: int, dtype: torch.dtype, device: torch.device):
        inv = 1.0 / (10000.0 ** (torch.arange(0, self.head_dim, 2, device=device, dtype=torch.float32) / self.head_dim))
        angles = torch.outer(torch.arange(start, start + length, device=device, dtype=torch.float32), inv)
        emb = torch.cat((angles, angles), dim=-1)
        return emb.cos().to(dtype), emb.sin().to(dtype)

    def forward(self, ids: torch.Tensor, caches: list | None = None, start: int = 0) -> torch.Tensor:
        x = self.embed_tokens(ids)
        cos, sin = self._tables(start, ids.shape[1], x.dtype, x.device)
        for i, layer in enumerate(self.layers):
            x = layer(x, cos, sin, None if caches is None else caches[i])
        return self.lm_head(self.norm(x[:, -1:]))  # logits of the last position, as serving engines do

    def empty_caches(self) -> list:
        return [[None, None] for _ in self.layers]


def build_decoder(arch: ModelArch, device: torch.device, dtype: torch.dtype) -> Decoder:
    if arch.model_type not in SUPPORTED_TYPES or arch.is_moe or arch.encoder:
        raise MeasureError(f"measuring {arch.name} ({arch.model_type}) is not supported: the built-in decoder "
                           f"covers {', '.join(SUPPORTED_TYPES)} (dense); measure a torch factory instead")
    params = arch.params
    budget = 0.6 * _available_memory(device)
    bytes_per = torch.finfo(dtype).bits // 8
    if params * bytes_per > budget:
        raise MeasureError(f"{arch.name}: {params * bytes_per / 2**30:,.1f} GiB of weights do not fit in "
                           f"{budget / 2**30:,.1f} GiB of this device; pick a smaller preset")
    with torch.device(device):
        model = Decoder(arch)
    return model.to(dtype=dtype).eval()


def _available_memory(device: torch.device) -> float:
    if device.type == "cuda":
        return float(torch.cuda.mem_get_info(device)[0])
    import os

    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return math.inf
