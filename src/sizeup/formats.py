"""Weight formats: bytes of every tensor under a quantization format, from its block layout.

- Plain: fp32, fp16, bf16 (every tensor at that width).
- fp8 / int8 (W8A8): linear weights at 8 bits plus one fp32 scale per output channel; embeddings,
  norms and the LM head stay bf16.
- GPTQ / AWQ int4, group size g: 4-bit weights, per group and output channel an fp16 scale and a
  4-bit zero point (GPTQ also stores an int32 `g_idx` per input channel); embeddings and LM head fp16.
- bitsandbytes NF4 (QLoRA): 4-bit codes in blocks of 64 with an fp32 absmax per block; with double
  quantization the absmax is stored in 8 bits with an fp32 scale per 256 blocks (Dettmers et al. 2023,
  QLoRA §3: 0.5 -> 0.127 bits per parameter).
- Weight-only (torchao `int8_weight_only`, `int4_weight_only(group_size=64)`, `float8_weight_only`): linear
  weights at 8 or 4 bits, activations stay bf16; int8/fp8 with one bf16 scale per output channel, int4 (tinygemm's
  packed layout) with a bf16 scale and a bf16 zero point per group of 64 and output channel; the LM head too
  (torchao's quantize_ converts every nn.Linear).
- LLM.int8() (`int8-bnb`, bitsandbytes `load_in_8bit`): int8 rows with one fp32 absmax per row (SCB); bnb 4-bit
  FP4 (`bnb-fp4`) stores as NF4 does (the codebook differs, not the layout).
- FP4 with block scales (OCP Microscaling v1.0; NVIDIA NVFP4): `nvfp4` 4-bit E2M1 in blocks of 16 with one FP8
  E4M3 scale per block and one fp32 scale per tensor; `mxfp4` E2M1 in blocks of 32 with one E8M0 (8-bit
  power of two) scale per block. mxfp4 is applied to a mixture of experts' expert weights only where the model has
  experts (gpt-oss ships so: its checkpoint's modules_to_not_convert keeps attention, router, embeddings and LM
  head bf16; vLLM's Mxfp4Config quantizes FusedMoE layers only), to every linear weight of a dense model.
- GGUF types from ggml's block layouts (bytes per block of 32 or 256 weights), and the K-quant mixes
  (Q4_K_M, …) that keep chosen tensors at higher precision, following llama.cpp's
  `llama_tensor_get_type` rules (src/llama-quant.cpp): output tensor Q6_K; attn_v and ffn_down of
  "more important" layers Q6_K in Q4_K_M/Q5_K_M; 8-expert models keep attn_k/attn_v at Q8_0; rows
  whose length is not a multiple of 256 fall back to a 32-block type.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from sizeup.errors import ConfigError

__all__ = ["GroupLayout", "groupwise_bytes", "exl2_format", "GGUF_BLOCKS", "GGML_TYPES", "WeightFormat", "FORMATS", "get_format", "gguf_type", "tensor_bytes", "tensor_bytes_map",
           "nf4_matrix_bytes", "LINEAR_ROLES", "Tensor", "Architecture"]


class Tensor(Protocol):
    """What a byte rule reads of a weight (`sizeup.ingest.arch.WeightTensor` is one)."""

    name: str
    shape: tuple[int, ...]
    role: str
    layer: int | None

    @property
    def numel(self) -> int: ...


class Architecture(Hashable, Protocol):
    """What a format's rules read of a model (`sizeup.ingest.arch.ModelArch` is one): formats sit
    below the readers that build architectures, so they name only this shape of one."""

    model_type: str
    tie_embeddings: bool
    layers: Sequence[Any]
    """Layer specs: `.attention.heads`, `.attention.kv_heads`, `.mlp.experts`."""

    @property
    def num_layers(self) -> int: ...

    def tensors(self) -> Sequence[Tensor]: ...

# ggml block layouts: type -> (weights per block, bytes per block). ggml-common.h block_* structs; the same
# figures as gguf-py's GGML_QUANT_SIZES (llama.cpp gguf-py/gguf/constants.py).
GGUF_BLOCKS: dict[str, tuple[int, int]] = {
    "F32": (1, 4), "F16": (1, 2), "BF16": (1, 2), "F64": (1, 8), "I8": (1, 1), "I16": (1, 2), "I32": (1, 4),
    "I64": (1, 8),
    "Q4_0": (32, 18), "Q4_1": (32, 20), "Q5_0": (32, 22), "Q5_1": (32, 24), "Q8_0": (32, 34), "Q8_1": (32, 36),
    "Q2_K": (256, 84), "Q3_K": (256, 110), "Q4_K": (256, 144), "Q5_K": (256, 176), "Q6_K": (256, 210),
    "Q8_K": (256, 292), "IQ4_NL": (32, 18), "IQ4_XS": (256, 136), "IQ2_XXS": (256, 66), "IQ2_XS": (256, 74),
    "IQ3_XXS": (256, 98), "IQ1_S": (256, 50), "IQ3_S": (256, 110), "IQ2_S": (256, 82), "IQ1_M": (256, 56),
    "TQ1_0": (256, 54), "TQ2_0": (256, 66), "MXFP4": (32, 17), "NVFP4": (64, 36), "Q1_0": (128, 18),
}
GGML_TYPES: dict[int, str] = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1", 10: "Q2_K", 11: "Q3_K",
    12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S",
    20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64",
    29: "IQ1_M", 30: "BF16", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4", 40: "NVFP4", 41: "Q1_0",
}
"""ggml type ids (ggml.h enum ggml_type; gguf-py GGMLQuantizationType) -> names. Ids 4, 5, 31-33 and 36-38 were
removed from the format (no block layout: llama.cpp refuses tensors of those types)."""
_FALLBACK = {"Q2_K": "Q4_0", "Q3_K": "Q4_0", "Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0", "IQ4_XS": "IQ4_NL"}
LINEAR_ROLES = {"attention", "mlp", "expert", "shared_expert", "encoder"}
"""Roles of the matrices a linear layer multiplies by: the ones a quantized format stores at low bits and a
LoRA target can adapt. "encoder" is an encoder-decoder's encoder stack (T5, Whisper), whose linears
bitsandbytes quantizes and PEFT adapts as it does the decoder's; its convolutions have role "conv"."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WeightFormat:
    id: str
    family: str
    """plain | w8a8 | gptq | awq | nf4 | gguf | wo (weight-only, activations at compute_dtype) | fp4 (block-scaled
    FP4: `scale_bits` per `group_size` weights and `tensor_scale_bytes` per tensor)"""
    compute_dtype: str
    """Precision the matrix products run at (activations × dequantized weights)."""
    bits: int = 16
    group_size: int = 128
    double_quant: bool = False
    gguf_base: str = ""
    gguf_mix: str = ""
    description: str = ""
    scale_bytes: float = 0.0
    """wo / fp4: bytes of the scales (and zero points) per group of `group_size` weights (per output channel where
    group_size is 0)."""
    tensor_scale_bytes: int = 0
    """fp4: bytes of the per-tensor scale (NVFP4's fp32 second-level scale)."""
    experts_only: bool = False
    """Only a mixture of experts' expert weights take the format (where the model has experts)."""
    lm_head: bool = False
    """The LM head takes the format too (torchao's quantize_ converts every nn.Linear, the output layer included)."""
    layout: GroupLayout | None = None
    """family 'groupwise': the bits, groups and tensors of the layout (MLX, EXL2, MLC formats, below)."""


FORMATS: dict[str, WeightFormat] = {f.id: f for f in [
    WeightFormat(id="fp32", family="plain", compute_dtype="fp32", bits=32, description="fp32 everywhere"),
    WeightFormat(id="fp16", family="plain", compute_dtype="fp16", bits=16, description="fp16 everywhere"),
    WeightFormat(id="bf16", family="plain", compute_dtype="bf16", bits=16, description="bf16 everywhere"),
    WeightFormat(id="fp8", family="w8a8", compute_dtype="fp8", bits=8,
                 description="fp8 linear weights with per-channel scales, fp8 activations"),
    WeightFormat(id="int8", family="w8a8", compute_dtype="int8", bits=8,
                 description="int8 linear weights with per-channel scales, int8 activations"),
    WeightFormat(id="gptq-int4", family="gptq", compute_dtype="fp16", bits=4, group_size=128,
                 description="GPTQ 4-bit, group 128"),
    WeightFormat(id="awq-int4", family="awq", compute_dtype="fp16", bits=4, group_size=128,
                 description="AWQ 4-bit, group 128"),
    WeightFormat(id="int4", family="awq", compute_dtype="fp16", bits=4, group_size=128,
                 description="4-bit weights, group 128 (AWQ layout)"),
    WeightFormat(id="nf4", family="nf4", compute_dtype="bf16", bits=4, group_size=64, double_quant=True,
                 description="bitsandbytes NF4 with double quantization (QLoRA)"),
    WeightFormat(id="nf4-no-dq", family="nf4", compute_dtype="bf16", bits=4, group_size=64,
                 description="bitsandbytes NF4 without double quantization"),
    WeightFormat(id="int8-bnb", family="w8a8", compute_dtype="int8", bits=8,
                 description="bitsandbytes LLM.int8(): int8 rows with an fp32 absmax each, fp16 outlier columns"),
    WeightFormat(id="bnb-fp4", family="nf4", compute_dtype="bf16", bits=4, group_size=64, double_quant=True,
                 description="bitsandbytes FP4 (4-bit float codes, NF4's block layout)"),
    WeightFormat(id="int8-wo", family="wo", lm_head=True, compute_dtype="bf16", bits=8, group_size=0, scale_bytes=2,
                 description="int8 weight-only (torchao int8_weight_only): per-channel bf16 scale, bf16 activations"),
    WeightFormat(id="fp8-wo", family="wo", lm_head=True, compute_dtype="bf16", bits=8, group_size=0, scale_bytes=4,
                 description="fp8 E4M3 weight-only (torchao float8_weight_only): per-channel fp32 scale"),
    WeightFormat(id="int4-wo-g64", family="wo", lm_head=True, compute_dtype="bf16", bits=4, group_size=64, scale_bytes=4,
                 description="int4 weight-only, group 64 (torchao int4_weight_only, tinygemm layout): bf16 scale "
                             "and zero per group"),
    WeightFormat(id="int4-wo-g128", family="wo", lm_head=True, compute_dtype="bf16", bits=4, group_size=128, scale_bytes=4,
                 description="int4 weight-only, group 128 (torchao int4_weight_only default, tinygemm layout)"),
    *[WeightFormat(id=f"int4-wo-g{g}", family="wo", lm_head=True, compute_dtype="bf16", bits=4, group_size=g,
                   scale_bytes=4, description=f"int4 weight-only, group {g} (torchao int4_weight_only(group_size={g}), "
                                              f"gpt-fast --mode int4 --groupsize {g}; tinygemm layout)")
      for g in (32, 256)],
    WeightFormat(id="nvfp4", family="fp4", compute_dtype="fp4", bits=4, group_size=16, scale_bytes=1,
                 tensor_scale_bytes=4, description="NVFP4: E2M1, an FP8 E4M3 scale per 16, an fp32 scale per tensor"),
    WeightFormat(id="mxfp4", family="fp4", compute_dtype="fp4", bits=4, group_size=32, scale_bytes=1,
                 experts_only=True, description="MXFP4 (OCP MX): E2M1, an E8M0 scale per 32; MoE experts only"),
    *[WeightFormat(id=name.lower(), family="gguf", compute_dtype="fp16", gguf_base=base, gguf_mix=mix,
                   description=f"GGUF {name}")
      for name, base, mix in [("Q2_K", "Q2_K", "Q2_K"), ("Q3_K_M", "Q3_K", "Q3_K_M"), ("Q4_0", "Q4_0", ""),
                              ("Q4_1", "Q4_1", ""), ("Q5_0", "Q5_0", ""), ("Q4_K_S", "Q4_K", "Q4_K_S"),
                              ("Q4_K_M", "Q4_K", "Q4_K_M"), ("Q5_K_S", "Q5_K", ""), ("Q5_K_M", "Q5_K", "Q5_K_M"),
                              ("Q6_K", "Q6_K", ""), ("Q8_0", "Q8_0", ""), ("F16", "F16", ""), ("IQ4_XS", "IQ4_XS", "")]],
    WeightFormat(id="mxfp4_moe", family="gguf", compute_dtype="fp16", gguf_base="MXFP4", gguf_mix="MXFP4_MOE",
                 description="GGUF MXFP4_MOE: MoE experts MXFP4, the other matrices Q8_0 (gpt-oss's GGUFs)"),
]}
_ALIASES = {"f16": "q8_0" if False else "f16", "awq": "awq-int4", "gptq": "gptq-int4", "bnb-nf4": "nf4",
            "qlora": "nf4", "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "w8a8": "int8",
            "fp8-e4m3": "fp8", "llm.int8": "int8-bnb", "bnb-int8": "int8-bnb", "int4-wo": "int4-wo-g128",
            "fp4-bnb": "bnb-fp4", "nf4-bnb": "nf4", "int4-awq": "awq-int4", "int4-gptq": "gptq-int4",
            "w4a16": "gptq-int4", "int8wo": "int8-wo", "int4wo-64": "int4-wo-g64", "int4wo-128": "int4-wo-g128",
            "float8wo": "fp8-wo"}
"""Other spellings: `int4_awq` is TensorRT-LLM / ModelOpt's --qformat name of AWQ (group 128 by default:
examples/quantization/quantize.py --awq_block_size 128, github.com/NVIDIA/TensorRT-LLM, read 2026-12-05); `w4a16` is
compressed-tensors' int4 weight-only scheme (quantization/quant_scheme.py W4A16: int, symmetric, group 128;
llm-compressor's preset, run by vLLM's Marlin kernel as GPTQ is); `int8wo`, `int4wo-64`,
`int4wo-128`, `float8wo` are torchao's --quantization names (gpt-fast / torchao generate.py)."""


def get_format(name: str) -> WeightFormat:
    key = str(name).strip().lower().replace("_", "-") if "_" not in str(name)[:2] else str(name).lower()
    key = re.sub(r"\s+", "-", key)  # 'exl2 4.65bpw', 'bnb nf4'
    key = _ALIASES.get(key, key)
    if key not in FORMATS:
        key = key.replace("-", "_")
    if key not in FORMATS and (parametric := exl2_format(key)) is not None:
        return parametric
    if key not in FORMATS:
        raise ConfigError(f"unknown quantization {name!r}: expected one of {', '.join(sorted(FORMATS))}, "
                          f"exl2-<bits>bpw")
    return FORMATS[key]


def _gguf_block_bytes(numel: int, row: int, gtype: str) -> tuple[int, str]:
    per_block, block_bytes = GGUF_BLOCKS[gtype]
    if row % per_block:
        gtype = _FALLBACK.get(gtype, "F16")
        per_block, block_bytes = GGUF_BLOCKS[gtype]
        if row % per_block:
            gtype, per_block, block_bytes = "F16", 1, 2
    return numel // per_block * block_bytes, gtype


def _more_bits(i: int, n: int) -> bool:
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def gguf_type(t: Tensor, arch: Architecture, fmt: WeightFormat, n_expert: int | None = None) -> str:
    """The ggml type llama.cpp's quantizer gives tensor `t` under `fmt` (before shape fall-back); `n_expert`: the
    model's largest expert count when the caller has it (it costs a hash of the whole architecture to look up)."""
    base, mix = fmt.gguf_base, fmt.gguf_mix
    if len(t.shape) < 2 or t.role in ("norm", "bias", "router"):
        return "F32"
    if t.role in ("position", "patch", "conv"):
        return "F16"
    if mix == "MXFP4_MOE":
        return _mxfp4_moe_type(t, arch)
    n = arch.num_layers
    n_expert = _max_experts(arch) if n_expert is None else n_expert
    if t.role == "lm_head" or (t.role == "embedding" and arch.tie_embeddings):
        return base if base in ("Q8_0", "F16", "F32", "BF16") else "Q6_K"
    if t.role == "embedding" or base in ("F16", "F32", "BF16"):
        return base
    name, i = t.name, t.layer if t.layer is not None else 0
    kind = "v" if name.endswith(("v_proj.weight", "kv_b_proj.weight")) else \
        "k" if name.endswith("k_proj.weight") else \
        "o" if name.endswith("o_proj.weight") else \
        "down" if ".down_proj" in name else ""
    new = base
    if kind == "v":
        if mix == "Q2_K":
            new = "Q4_K" if _gqa(arch) >= 4 else "Q3_K"
        elif mix == "Q3_K_M":
            new = "Q5_K" if i < 2 else "Q4_K"
        elif mix in ("Q4_K_M", "Q5_K_M") and _more_bits(i, n):
            new = "Q6_K"
        elif mix == "Q4_K_S" and i < 4:
            new = "Q5_K"
        if arch.model_type == "llama" and n == 80 and new in ("Q3_K", "Q4_K"):
            new = "Q5_K"  # llama.cpp's LLM_TYPE_70B rule
        if n_expert == 8:
            new = "Q8_0"
    elif kind == "k" and n_expert == 8:
        new = "Q8_0"
    elif kind == "down":
        if mix == "Q2_K":
            new = "Q3_K"
        elif mix == "Q3_K_M":
            new = "Q5_K" if i < n // 16 else "Q4_K"
        elif mix in ("Q4_K_M", "Q5_K_M") and _more_bits(i, n):
            new = "Q6_K"
        elif mix == "Q4_K_S" and i < n // 8:
            new = "Q5_K"
    elif kind == "o":
        if n_expert == 8 and mix in ("Q2_K", "Q3_K_M", "Q4_K_S", "Q4_K_M"):
            new = "Q5_K"
        elif n_expert != 8 and mix == "Q2_K":
            new = "Q3_K"
        elif n_expert != 8 and mix == "Q3_K_M":
            new = "Q4_K"
    return new


def _mxfp4_moe_type(t: Tensor, arch: Architecture) -> str:
    """LLAMA_FTYPE_MOSTLY_MXFP4_MOE in llama_tensor_get_type (src/llama-quant.cpp, read 2026-12-06): the output
    tensor (the embedding where tied) first takes the output rule, Q8_0 where its rows (ne[0]) are not a multiple
    of QK_K = 256, else Q6_K; then "MoE tensors -> MXFP4, other tensors -> Q8_0" (ne[2] > 1: the stacked experts);
    ffn_gate_inp (the router), biases (only names ending in "weight" are quantized: the experts' stacked
    biases are 2-D) and 1-D tensors (norms, gpt-oss's attention sinks) stay F32."""
    if t.role == "lm_head" or (t.role == "embedding" and arch.tie_embeddings):
        return "Q8_0" if t.shape[-1] % 256 else "Q6_K"
    if t.role == "expert":
        return "MXFP4" if len(t.shape) > 2 else "F32"
    return "Q8_0"


@lru_cache(maxsize=64)
def _max_experts(arch: Architecture) -> int:
    return max((layer.mlp.experts for layer in arch.layers), default=0)


def _gqa(arch: Architecture) -> int:
    a = arch.layers[0].attention
    return a.heads // max(a.kv_heads, 1)


def tensor_bytes(t: Tensor, arch: Architecture, fmt: WeightFormat, n_expert: int | None = None) -> int:
    """Bytes of tensor `t` stored in `fmt`, scales and zero points included."""
    numel = t.numel
    if fmt.family == "plain":
        return numel * fmt.bits // 8
    if fmt.family == "gguf":
        return _gguf_block_bytes(numel, t.shape[-1], gguf_type(t, arch, fmt, n_expert))[0]
    if fmt.family == "groupwise":
        return groupwise_bytes(t, fmt.layout)
    linear = (t.role in LINEAR_ROLES or fmt.lm_head and t.role == "lm_head") and len(t.shape) >= 2
    if linear and fmt.experts_only and t.role != "expert" and (
            _max_experts(arch) if n_expert is None else n_expert) > 0:
        linear = False
    if not linear:
        return numel * 2  # fp16 / bf16 for embeddings, norms, biases, router, LM head
    rows = numel // t.shape[-1]  # output channels (times experts)
    cols = t.shape[-1]
    if fmt.family == "w8a8":
        return numel + rows * 4
    if fmt.family in ("gptq", "awq"):
        groups = -(-cols // fmt.group_size) if fmt.group_size else 1  # group_size 0: one group per row
        scales_zeros = rows * groups * 2 + rows * groups // 2  # fp16 scale + packed 4-bit zero per group
        g_idx = cols * 4 * (numel // (rows * cols)) if fmt.family == "gptq" else 0
        return numel // 2 + scales_zeros + g_idx
    if fmt.family == "nf4":
        return nf4_matrix_bytes(rows, cols, fmt)
    if fmt.family in ("wo", "fp4"):
        groups = rows * -(-cols // fmt.group_size) if fmt.group_size else rows
        return int(numel * fmt.bits // 8 + groups * fmt.scale_bytes + fmt.tensor_scale_bytes)
    raise ConfigError(f"format {fmt.id!r} has no byte rule")


def nf4_matrix_bytes(rows: int, cols: int, fmt: WeightFormat) -> int:
    """A rows × cols matrix in NF4: 4-bit codes plus one absmax per block (fp32, or 8-bit with fp32
    scales per 256 blocks under double quantization)."""
    numel = rows * cols
    blocks = -(-numel // fmt.group_size)
    if fmt.double_quant:
        return numel // 2 + blocks + (-(-blocks // 256)) * 4
    return numel // 2 + blocks * 4


@lru_cache(maxsize=64)
def tensor_bytes_map(arch: Architecture, fmt: WeightFormat) -> dict[str, int]:
    """Bytes of every tensor of `arch` in `fmt`, by tensor name (cached: treat as read-only)."""
    n_expert = _max_experts(arch)
    return {t.name: tensor_bytes(t, arch, fmt, n_expert) for t in arch.tensors()}


# --- group-wise formats of the local engines (MLX, ExLlamaV2 EXL2, MLC-LLM) ---------------------------------------

@dataclass(frozen=True, slots=True)
class GroupLayout:
    """A group-wise quantized layout: `bits` per weight code, and per group of `group_size` weights of a row
    `group_bits` bits of scale (and bias); which of the embedding and LM head it also quantizes."""

    bits: float
    """Bits per weight code; EXL2: the average bits per weight of the linear layers, its scales included."""
    group_size: int
    group_bits: int
    """Bits of scale and bias stored per group (MLX: a scale and a bias in the model's 16-bit dtype: 32)."""
    embedding: bool
    """Whether the token embedding is quantized too (else 16-bit)."""
    head_bits: float | None
    """Bits per weight of an untied LM head (None: 16-bit); an embedding tied to the head follows `embedding`."""
    source: str = ""


def groupwise_bytes(t: Tensor, layout: GroupLayout) -> int:
    """Bytes of tensor `t` under a group-wise layout: the linear layers (and, where the layout says so, the
    embedding and LM head) at `bits` per weight plus `group_bits` per group; norms, biases, routers 16-bit."""
    numel = t.numel
    if len(t.shape) < 2 or t.role in ("norm", "bias", "router", "position", "patch", "conv"):
        return numel * 2
    if t.role == "embedding":
        bits = layout.bits if layout.embedding else 16.0
    elif t.role == "lm_head":
        bits = layout.head_bits if layout.head_bits is not None else 16.0
    elif t.role in LINEAR_ROLES:
        bits = layout.bits
    else:
        return numel * 2
    if bits >= 16:
        return numel * 2
    groups = -(-t.shape[-1] // layout.group_size) if layout.group_size else 1
    rows = numel // t.shape[-1]
    return int(numel * bits / 8) + rows * groups * layout.group_bits // 8


_MLX_SOURCE = ("mlx_lm.convert -q: bits 4 and q_group_size 64 by default (mlx_lm/convert.py); nn.quantize turns every "
               "Linear and Embedding whose input size is a multiple of the group into a quantized one, storing per "
               "group a scale and a bias in the model's dtype (mlx.core.quantize, mode 'affine')")
_MLC_SOURCE = ("mlc-llm python/mlc_llm/quantization/quantization.py: q4f16_1 = GroupQuantize(4-bit int, group_size 32, "
               "fp16 scale, symmetric: no stored zero), q4f32_1 the same with fp32 scales, both quantizing the "
               "embedding and the LM head; q4f16_ft = FTQuantize (int4, per output channel fp16 scale, "
               "FasterTransformer kernels)")
_EXL2_SOURCE = ("exllamav2 convert.py: -b target bits per weight (average over the linear layers, scales included, "
                "as the measurement pass optimises it), -hb head bits default 6; the embedding stays fp16")

FORMATS.update({f.id: f for f in [
    *[WeightFormat(id=f"mlx-q{b}", family="groupwise", compute_dtype="bf16", bits=b, group_size=64,
                   description=f"MLX group-wise affine {b}-bit, group 64, 16-bit scale and bias",
                   layout=GroupLayout(b, 64, 32, True, float(b), _MLX_SOURCE)) for b in (2, 3, 4, 6, 8)],
    WeightFormat(id="mlc-q4f16_1", family="groupwise", compute_dtype="fp16", bits=4, group_size=32,
                 description="MLC-LLM q4f16_1: 4-bit, group 32, fp16 scale (embedding and head quantized)",
                 layout=GroupLayout(4, 32, 16, True, 4.0, _MLC_SOURCE)),
    WeightFormat(id="mlc-q4f32_1", family="groupwise", compute_dtype="fp32", bits=4, group_size=32,
                 description="MLC-LLM q4f32_1: 4-bit, group 32, fp32 scale (embedding and head quantized)",
                 layout=GroupLayout(4, 32, 32, True, 4.0, _MLC_SOURCE)),
    WeightFormat(id="mlc-q4f16_ft", family="groupwise", compute_dtype="fp16", bits=4, group_size=0,
                 description="MLC-LLM q4f16_ft: 4-bit per output channel, FasterTransformer kernels",
                 layout=GroupLayout(4, 0, 16, False, None, _MLC_SOURCE)),
    WeightFormat(id="gptq-int4-g0", family="gptq", compute_dtype="fp16", bits=4, group_size=0,
                 description="GPTQ 4-bit without groups (one scale and zero per output channel)"),
    WeightFormat(id="gptq-int4-g32", family="gptq", compute_dtype="fp16", bits=4, group_size=32,
                 description="GPTQ 4-bit, group 32 (a scale and zero per 32 weights: TheBloke's '32g' branches)"),
]})
_ALIASES.update({"mlc-q4f16-1": "mlc-q4f16_1", "q4f16-1": "mlc-q4f16_1", "mlc-q4f32-1": "mlc-q4f32_1",
                 "q4f32-1": "mlc-q4f32_1", "mlc-q4f16-ft": "mlc-q4f16_ft", "q4f16-ft": "mlc-q4f16_ft",
                 "mlx-4bit": "mlx-q4", "mlx-8bit": "mlx-q8", "mlx-6bit": "mlx-q6",
                 "q0f16": "fp16", "q0f32": "fp32", "mlc-q0f16": "fp16",
                 "int4wo": "int4-wo-g128", "int4-weight-only": "int4-wo-g128", "int8-weight-only": "int8-wo",
                 "float8-weight-only": "fp8-wo", "fp8wo": "fp8-wo", "int4wo-64-hqq": "int4-wo-g64",
                 "int4wo-128-hqq": "int4-wo-g128", "int4-wo-64": "int4-wo-g64", "int4-wo-128": "int4-wo-g128",
                 **{f"{p}{g}": f"int4-wo-g{g}" for g in (32, 256) for p in ("int4wo-", "int4-wo-")},
                 "gptq-4bit": "gptq-int4", "gptq-int4-g128": "gptq-int4", "gptq-4bit-128g": "gptq-int4",
                 "4bit-128g": "gptq-int4", "gptq-4bit-g0": "gptq-int4-g0", "gptq-4bit-32g": "gptq-int4-g32",
                 "4bit-32g": "gptq-int4-g32",
                 "load-in-8bit": "int8-bnb", "load-in-4bit": "bnb-fp4", "bnb-8bit": "int8-bnb", "bnb-4bit": "nf4",
                 "nf4-dq": "nf4", "bnb-fp4-no-dq": "bnb-fp4"})
"""More spellings: MLC's q0f16 / q0f32 (no quantization); torchao's config names (int4_weight_only(group_size=128) by
default, the HQQ variants store the same int4 tinygemm layout); GPTQ repositories' '4bit-128g'; transformers'
load_in_8bit / load_in_4bit (BitsAndBytesConfig's default 4-bit type is 'fp4'); the Hub's '-bnb-4bit' checkpoints (NF4
with double quantization in their quantization_config)."""

_EXL2 = re.compile(r"(?:exl2[-_])?(\d+(?:\.\d+)?)-?bpw")
"""'exl2-4.65bpw', and '4.65bpw' alone: bits per weight is EXL2's naming (turboderp's and the Hub's '-4.65bpw' repos)."""


def exl2_format(key: str) -> WeightFormat | None:
    """'exl2-4.65bpw' -> the EXL2 format at 4.65 bits per weight (2 to 8), or None when `key` is not one."""
    if key == "exl2":
        raise ConfigError("--quant exl2: EXL2 needs its bits per weight, e.g. exl2-4.65bpw (2 to 8)")
    m = _EXL2.fullmatch(key)
    if m is None:
        return None
    bpw = float(m.group(1))
    if not 2.0 <= bpw <= 8.0:
        raise ConfigError(f"--quant exl2-{m.group(1)}bpw: EXL2 bits per weight must be between 2 and 8 (e.g. exl2-4.65bpw)")
    return WeightFormat(id=f"exl2-{bpw:g}bpw", family="groupwise", compute_dtype="fp16", bits=round(bpw),
                        group_size=0, description=f"ExLlamaV2 EXL2 at {bpw:g} bits per weight (head 6 bits)",
                        layout=GroupLayout(bpw, 0, 0, False, 6.0, _EXL2_SOURCE))
