"""Small reference models used by the README, the tests and the benchmarks (needs torch).

Each factory builds its model with random weights; sizes follow the reference write-ups.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F


# ---- YOLOv8-style C2f ------------------------------------------------------------------------

class Conv(nn.Module):
    """Conv2d (no bias) + BatchNorm2d + SiLU, as in YOLOv8."""

    def __init__(self, c1: int, c2: int, k: int = 1, s: int = 1, groups: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(c2)
        self.act = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.bn(self.conv(x)))


class DWSConv(nn.Module):
    """Depthwise-separable replacement of a k×k Conv: depthwise k×k Conv, then pointwise 1×1 Conv."""

    def __init__(self, c1: int, c2: int, k: int = 3) -> None:
        super().__init__()
        self.dw = Conv(c1, c1, k, groups=c1)
        self.pw = Conv(c1, c2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pw(self.dw(x))


class Bottleneck(nn.Module):
    def __init__(self, c1: int, c2: int, shortcut: bool = True, depthwise: bool = False) -> None:
        super().__init__()
        block = DWSConv if depthwise else Conv
        self.cv1 = block(c1, c2, 3)
        self.cv2 = block(c2, c2, 3)
        self.add = shortcut and c1 == c2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(nn.Module):
    """cv1 (1×1, c1→2c), split in two, n Bottlenecks on the last half, concat of (2+n)·c, cv2 (1×1)."""

    def __init__(self, c1: int = 64, c2: int = 128, n: int = 1, shortcut: bool = True, depthwise: bool = False) -> None:
        super().__init__()
        self.c = c2 // 2
        self.cv1 = Conv(c1, 2 * self.c, 1)
        self.cv2 = Conv((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList(Bottleneck(self.c, self.c, shortcut, depthwise) for _ in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = list(self.cv1(x).chunk(2, 1))
        for block in self.m:
            y.append(block(y[-1]))
        return self.cv2(torch.cat(y, 1))


def c2f() -> C2f:
    """The reference write-up's C2f: c1=64, c2=128, n=1, shortcut; input [1, 64, 64, 64]."""
    return C2f(64, 128, 1, True)


def c2f_depthwise() -> C2f:
    """The same block with its 3×3 convs replaced by depthwise-separable ones."""
    return C2f(64, 128, 1, True, depthwise=True)


# ---- LLaMA-style decoder ---------------------------------------------------------------------

class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    def __init__(self, hidden: int, heads: int, kv_heads: int, use_sdpa: bool = True) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.q_proj = nn.Linear(hidden, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, hidden, bias=False)
        self.use_sdpa = use_sdpa

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        groups = self.heads // self.kv_heads
        k = k.repeat_interleave(groups, dim=1)
        v = v.repeat_interleave(groups, dim=1)
        if self.use_sdpa:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
            mask = torch.full((s, s), float("-inf"), dtype=x.dtype, device=x.device).triu(1)
            o = torch.softmax(scores + mask, dim=-1) @ v
        return self.o_proj(o.transpose(1, 2).reshape(b, s, -1))


class MLP(nn.Module):
    """SwiGLU: down(silu(gate(x)) * up(x))."""

    def __init__(self, hidden: int, intermediate: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, kv_heads: int, intermediate: int, use_sdpa: bool = True) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(hidden)
        self.self_attn = Attention(hidden, heads, kv_heads, use_sdpa)
        self.post_attention_layernorm = RMSNorm(hidden)
        self.mlp = MLP(hidden, intermediate)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


def rope_tables(seq: int, head_dim: int, dtype: torch.dtype, base: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(seq, dtype=torch.float32), inv_freq)
    emb = torch.cat((angles, angles), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


class LlamaBlock(nn.Module):
    """One decoder layer that makes its own rotary tables: input [batch, seq, hidden]."""

    def __init__(self, hidden: int = 512, heads: int = 8, kv_heads: int = 2, intermediate: int = 1376,
                 use_sdpa: bool = True) -> None:
        super().__init__()
        self.layer = DecoderLayer(hidden, heads, kv_heads, intermediate, use_sdpa)
        self.head_dim = hidden // heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cos, sin = rope_tables(x.shape[1], self.head_dim, x.dtype)
        return self.layer(x, cos, sin)


class LlamaModel(nn.Module):
    """Embedding, N decoder layers, final RMSNorm and LM head: input token ids [batch, seq]."""

    def __init__(self, vocab: int, hidden: int, layers: int, heads: int, kv_heads: int, intermediate: int) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(DecoderLayer(hidden, heads, kv_heads, intermediate) for _ in range(layers))
        self.norm = RMSNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        self.head_dim = hidden // heads

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.embed_tokens(input_ids)
        cos, sin = rope_tables(input_ids.shape[1], self.head_dim, x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.norm(x))


def llama_block() -> LlamaBlock:
    """A LLaMA-style block with GQA: 8 query heads, 2 KV heads, hidden 512, SwiGLU 1376, SDPA."""
    return LlamaBlock()


def llama_block_matmul() -> LlamaBlock:
    """The same block with attention written as matmul + softmax instead of SDPA."""
    return LlamaBlock(use_sdpa=False)


def llama_7b() -> LlamaModel:
    """LLaMA-7B shape: 32 layers, hidden 4096, 32 heads, MLP 11008, vocab 32000 (6.74B parameters)."""
    return LlamaModel(vocab=32000, hidden=4096, layers=32, heads=32, kv_heads=32, intermediate=11008)


# ---- GPT-2-style block with SDPA --------------------------------------------------------------

class GPT2Block(nn.Module):
    def __init__(self, hidden: int = 768, heads: int = 12) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden)
        self.c_attn = nn.Linear(hidden, 3 * hidden)
        self.c_proj = nn.Linear(hidden, hidden)
        self.ln_2 = nn.LayerNorm(hidden)
        self.c_fc = nn.Linear(hidden, 4 * hidden)
        self.mlp_proj = nn.Linear(4 * hidden, hidden)
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(h, dim=-1)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(o.transpose(1, 2).reshape(b, s, h))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, vocab: int = 50257, positions: int = 1024, hidden: int = 768, layers: int = 12,
                 heads: int = 12) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(positions, hidden)
        self.h = nn.ModuleList(GPT2Block(hidden, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.wte(input_ids) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def gpt2_small() -> GPT2:
    """GPT-2 small (124M): 12 layers, hidden 768, 12 heads, tied embeddings."""
    return GPT2()


# ---- a block of einsum + interpolate + grid_sample ---------------------------------------------

class WarpBlock(nn.Module):
    """Channel mixing by einsum, 2× bilinear upsampling, then a learned-offset grid sample."""

    def __init__(self, channels: int = 32) -> None:
        super().__init__()
        self.mix = nn.Parameter(torch.randn(channels, channels) / channels)
        self.offset = nn.Conv2d(channels, 2, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.einsum("bchw,dc->bdhw", x, self.mix)
        y = F.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)
        grid = torch.tanh(self.offset(y)).permute(0, 2, 3, 1)
        return F.grid_sample(y, grid, mode="bilinear", align_corners=False)


def warp_block() -> WarpBlock:
    """Input [1, 32, 32, 32]."""
    return WarpBlock()


# ---- ResNet-50 written by hand -----------------------------------------------------------------

class ResBottleneck(nn.Module):
    expansion = 4

    def __init__(self, c_in: int, width: int, stride: int = 1) -> None:
        super().__init__()
        c_out = width * self.expansion
        self.conv1 = nn.Conv2d(c_in, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, c_out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(c_out)
        self.downsample = None
        if stride != 1 or c_in != c_out:
            self.downsample = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        return F.relu(self.bn3(self.conv3(y)) + identity)


class ResNet50(nn.Module):
    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers, c_in = [], 64
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            stage = []
            for i in range(blocks):
                stage.append(ResBottleneck(c_in, width, stride if i == 0 else 1))
                c_in = width * ResBottleneck.expansion
            layers.append(nn.Sequential(*stage))
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.fc = nn.Linear(2048, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def resnet50() -> ResNet50:
    """ResNet-50 v1.5 (stride on the 3×3 conv), 25.56M parameters; input [1, 3, 224, 224]."""
    return ResNet50()


# ---- a small conv + MLP network for calibrating a device ------------------------------------

class MLPConvNet(nn.Module):
    """A conv stem (3×3 convs with batch norm and SiLU) and a transformer-style MLP head (LayerNorm,
    linear layers with GELU): every op kind a calibration needs, in one small model."""

    def __init__(self, channels: int = 32, width: int = 256, depth: int = 2) -> None:
        super().__init__()
        self.stem = nn.Sequential(Conv(3, channels, 3), Conv(channels, 2 * channels, 3, 2),
                                  Conv(2 * channels, 2 * channels, 1))
        self.proj = nn.Linear(2 * channels, width)
        self.blocks = nn.ModuleList(nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 4 * width), nn.GELU(),
                                                  nn.Linear(4 * width, width)) for _ in range(depth))
        self.head = nn.Linear(width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        tokens = self.proj(x.flatten(2).transpose(1, 2))
        for block in self.blocks:
            tokens = tokens + block(tokens)
        return self.head(tokens.mean(dim=1))


def mlp_conv_net() -> MLPConvNet:
    """Input [batch, 3, 32, 32]."""
    return MLPConvNet()


# ---- a small YOLO-style classifier for trial runs on the CPU ------------------------------------

class TinyCNN(nn.Module):
    """A YOLOv8-style stem (Conv-BN-SiLU, a stride-2 Conv, one C2f block) with a pooled linear head: the layer
    kinds of a detector's backbone at a size that trains in milliseconds per batch on a CPU (trial-run tests)."""

    def __init__(self, classes: int = 10, width: int = 16) -> None:
        super().__init__()
        self.stem = Conv(3, width, 3)
        self.down = Conv(width, 2 * width, 3, 2)
        self.c2f = C2f(2 * width, 2 * width, 1, True)
        self.head = nn.Linear(2 * width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.c2f(self.down(self.stem(x)))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def tiny_cnn() -> TinyCNN:
    """Input [batch, 3, 32, 32], 10 classes."""
    return TinyCNN()
