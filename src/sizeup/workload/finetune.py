"""Fine-tuning methods: which parameters train, in what format the frozen ones are stored.

- full: every parameter trains.
- freeze: only the last `trainable_layers` decoder layers (and the final norm and LM head) train.
- lora: a rank-r adapter per target linear layer, W' = W + B·A with A [r × in] and B [out × r]:
  r·(in + out) parameters; the base stays in the compute precision, frozen. A target names a module
  wherever it sits, as PEFT matches it (the module path ends with it): in an encoder-decoder (T5, Whisper,
  BART) q_proj, v_proj are adapted in the encoder's self-attention, the decoder's self-attention and its
  cross-attention alike (PEFT's default for t5 is ["q", "v"], for bart ["q_proj", "v_proj"],
  peft/utils/constants.py). transformers' own module names (T5's q, k, v, o, wi_0, wi_1, wo; BART's and
  Whisper's fc1, fc2, out_proj; BERT's query, key, value) name the same modules.
- qlora: LoRA over a base stored in NF4 with double quantization (Dettmers et al. 2023).
- dora: LoRA plus a trainable magnitude vector of `out` entries per target (Liu et al. 2024).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from sizeup.errors import ConfigError
from sizeup.ingest.hf_config import ModelArch, WeightTensor
from sizeup.workload.quantize import LINEAR_ROLES

__all__ = ["Method", "FinetuneSpec", "Trainable", "trainable_parameters", "target_names", "lora_params", "targeted",
           "adapts_encoder", "dequant_traffic_bytes", "ADAPTER_DTYPES", "HF_MODULE_NAMES", "BNB_UNQUANTIZED", "bnb_quantized"]

HF_MODULE_NAMES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj", "wi_0": "gate_proj", "wi_1": "up_proj",
                   "wo": "down_proj", "fc1": "up_proj", "fc2": "down_proj", "out_proj": "o_proj", "query": "q_proj",
                   "key": "k_proj", "value": "v_proj"}
"""transformers' module names (T5, BART / Whisper, BERT) -> sizeup's, so a PEFT `target_modules` list names the
same modules here (T5's ungated `wi` is left out: in a gated T5 PEFT matches no module by it)."""


ADAPTER_DTYPES = {
    "base": "adapter weights in the base's dtype (litgpt, torchtune; PEFT with autocast_adapter_dtype=False): they read "
            "the base's input",
    "fp32": "PEFT's default (autocast_adapter_dtype=True): fp32 adapter weights, gradients and AdamW moments on a "
            "16-bit base, and each adapted module casts its own copy of its input (peft tuners/lora/layer.py "
            "Linear.forward: x = self._cast_input_dtype(x, lora_A.weight.dtype))",
}


class Method(str, Enum):
    FULL = "full"
    FREEZE = "freeze"
    LORA = "lora"
    QLORA = "qlora"
    DORA = "dora"


@dataclass(frozen=True, slots=True, kw_only=True)
class FinetuneSpec:
    method: Method = Method.FULL
    rank: int = 16
    targets: tuple[str, ...] = ("q_proj", "v_proj")
    """Module names (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, …), 'all-linear' and
    'lm_head'."""
    trainable_layers: int = 2
    """freeze: how many of the last layers train."""
    dropout: float = 0.0
    """LoRA dropout on each adapter's input (PEFT's default 0.0, litgpt's 0.05): with p > 0 every adapter
    keeps a dropped copy of its input and the mask for its backward pass."""
    double_quant: bool = True
    """qlora: NF4 with double quantization (8-bit block scales, the QLoRA paper's recipe); False: fp32
    scales (bitsandbytes' plain nf4, litgpt's 'bnb.nf4')."""
    fused_qkv: bool = False
    """q, k and v come from one product (litgpt's LoRAQKVLinear): one adapter input for the three rather
    than one per module (PEFT), and one output buffer that q, k and v are views of."""
    quantize_head: bool = False
    """qlora: the LM head is quantized too (Lightning's bitsandbytes plugin); transformers keeps it in bf16."""
    dequant_copies: int = 1
    """qlora: full-size copies of a 4-bit weight made to multiply it: 1 when the weights were quantized in the
    compute dtype, 2 when they were quantized from fp16 and the step computes in bf16 (Lightning)."""
    adapter_dtype: str = "base"
    """The adapters' weight dtype on a 16-bit base: "base" (the base's, as litgpt and torchtune create them, and
    PEFT with autocast_adapter_dtype=False) or "fp32" (PEFT's default since 0.12: get_peft_model upcasts fp16 /
    bf16 adapter weights to float32, and each adapted module casts its input to that dtype); see
    ADAPTER_DTYPES."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "method", Method(self.method))
        if self.method in (Method.LORA, Method.QLORA, Method.DORA) and self.rank < 1:
            raise ConfigError(f"--rank {self.rank}: a LoRA rank must be a positive integer")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"--lora-dropout {self.dropout}: expected a probability in [0, 1)")
        if self.dequant_copies not in (1, 2):
            raise ConfigError(f"dequant_copies {self.dequant_copies}: expected 1 or 2")
        if self.adapter_dtype not in ADAPTER_DTYPES:
            raise ConfigError(f"adapter_dtype {self.adapter_dtype!r}: expected one of {', '.join(ADAPTER_DTYPES)}")
        if self.method == Method.FREEZE and self.trainable_layers < 1:
            raise ConfigError(f"--trainable-layers {self.trainable_layers}: expected 1 or more")

    @property
    def uses_adapters(self) -> bool:
        return self.method in (Method.LORA, Method.QLORA, Method.DORA)


@dataclass(frozen=True, slots=True, kw_only=True)
class Trainable:
    trainable_params: int
    """Parameters with gradients and optimizer state."""
    frozen_params: int
    adapter_params: int = 0
    trainable_layers: tuple[int, ...] = ()
    """Decoder layers whose weights (or adapters) receive gradients; backward must reach the lowest."""
    encoder: bool = False
    """An encoder-decoder's encoder stack trains (its weights, or adapters on them): backward runs through it."""


def module_name(t: WeightTensor) -> str:
    """"layers.3.attn.q_proj.weight" -> "q_proj"; stacked experts -> "experts.gate_proj"."""
    parts = t.name.split(".")
    name = parts[-2]
    if len(parts) >= 3 and parts[-3] in ("experts", "shared_experts"):
        return f"{parts[-3]}.{name}"
    return name


def target_names(arch: ModelArch) -> list[str]:
    return sorted({module_name(t) for t in arch.tensors() if t.role in LINEAR_ROLES and t.name.endswith(".weight")})


def _matches(name: str, targets: tuple[str, ...]) -> bool:
    if "all-linear" in targets:
        return True
    targets = tuple(HF_MODULE_NAMES.get(t, t) for t in targets)
    return any(name == t or name.endswith("." + t) or re.fullmatch(t, name) for t in targets)


def targeted(name: str, spec: FinetuneSpec) -> bool:
    """Whether module `name` (q_proj, down_proj, lm_head…) carries an adapter under `spec`."""
    return name in spec.targets if name == "lm_head" else _matches(name, spec.targets)


def lora_params(shape: tuple[int, ...], rank: int) -> int:
    """A [r × in] + B [out × r] per matrix (a stack of experts has one adapter per expert)."""
    *stack, out, inp = shape
    experts = stack[0] if stack else 1
    return experts * rank * (inp + out)


def trainable_parameters(arch: ModelArch, spec: FinetuneSpec) -> Trainable:
    tensors = arch.tensors()
    total = sum(t.numel for t in tensors)
    n = arch.num_layers
    if spec.method == Method.FULL:
        return Trainable(trainable_params=total, frozen_params=0, trainable_layers=tuple(range(n)),
                         encoder=bool(arch.encoder_layers))
    if spec.method == Method.FREEZE:  # the last decoder layers, the final norm and the head (not the encoder's norm)
        first = max(n - spec.trainable_layers, 0)
        trainable = sum(t.numel for t in tensors if (t.layer is not None and t.layer >= first)
                        or (t.layer is None and t.role in ("norm", "lm_head") and not _in_encoder(t)))
        return Trainable(trainable_params=trainable, frozen_params=total - trainable,
                         trainable_layers=tuple(range(first, n)))
    available = target_names(arch)
    unknown = [t for t in spec.targets if t not in ("all-linear", "lm_head")
               and not any(_matches(a, (t,)) for a in available)]
    if unknown:
        raise ConfigError(f"--targets {unknown[0]!r} matches no module of {arch.name}: modules are "
                          f"{', '.join(available)} (or all-linear, lm_head)")
    adapters, layers, encoder = 0, set(), False
    for t in tensors:
        head = t.role == "lm_head" and "lm_head" in spec.targets
        if head or (t.role in LINEAR_ROLES and t.name.endswith(".weight") and _matches(module_name(t), spec.targets)):
            adapters += lora_params(t.shape, spec.rank)
            if spec.method == Method.DORA:
                adapters += t.shape[-2] * (t.shape[0] if len(t.shape) == 3 else 1)
            layers.add(t.layer)
            encoder = encoder or _in_encoder(t)
    return Trainable(trainable_params=adapters, frozen_params=total, adapter_params=adapters,
                     trainable_layers=tuple(sorted(x for x in layers if x is not None)), encoder=encoder)


def _in_encoder(t: WeightTensor) -> bool:
    """A tensor of an encoder-decoder's encoder stack (sizeup's families name them "encoder.*"; the generic
    reader keeps transformers' paths, "model.encoder.*")."""
    return t.name.startswith("encoder.") or ".encoder." in t.name


def adapts_encoder(arch: ModelArch, spec: FinetuneSpec) -> bool:
    """Whether `spec` trains anything in the encoder stack of an encoder-decoder `arch` (full fine-tuning, or an
    adapter on one of its linears): then backward runs through the encoder and its layers keep activations."""
    if not arch.encoder_layers or spec.method == Method.FREEZE:
        return False
    return trainable_parameters(arch, spec).encoder


BNB_UNQUANTIZED = {"t5": ("down_proj",)}
"""Linears transformers leaves unquantized under bitsandbytes: a model's `_keep_in_fp32_modules` join the modules
not converted (quantizers/base.py get_modules_to_not_convert); T5's is ["wo"] (modeling_t5.py), the MLP's down
projection of every encoder and decoder layer, stored in the compute dtype (fp32 only when loaded in fp16)."""


def bnb_quantized(arch: ModelArch, t: WeightTensor) -> bool:
    """Whether bitsandbytes stores linear weight `t` in 4 bits (QLoRA)."""
    return t.role in LINEAR_ROLES and len(t.shape) >= 2 and module_name(t) not in BNB_UNQUANTIZED.get(arch.model_type, ())


NF4_BYTES_PER_WEIGHT = 0.5
"""4-bit codes; the block scales (~0.127 bit/weight with double quantization) are left out of the traffic."""


def dequant_traffic_bytes(arch: ModelArch, spec: FinetuneSpec) -> float:
    """qlora: bytes one dequantization of every 4-bit weight moves beyond what the matmul priced at NF4 reads.

    bitsandbytes multiplies a 4-bit weight by first dequantizing it to a full-size 16-bit copy (its
    `MatMul4Bit` calls `dequantize_4bit` in forward and again in backward for the input gradient, Dettmers et
    al. 2023 / bitsandbytes autograd/_functions.py), then a cuBLAS GEMM reads that copy: per weight the kernel
    reads 0.5 B and writes 2 B, the GEMM reads 2 B, against the 0.5 B priced: 4 B more; a second copy
    (`dequant_copies` 2: quantized from fp16, computed in bf16) reads and writes 2 B more each.
    """
    if spec.method != Method.QLORA:
        return 0.0
    weights = sum(t.numel for t in arch.tensors() if bnb_quantized(arch, t) and t.name.endswith(".weight"))
    if spec.quantize_head and arch.lm_head:
        weights += arch.vocab * arch.hidden
    per_weight = 2.0 + 2.0 - NF4_BYTES_PER_WEIGHT + NF4_BYTES_PER_WEIGHT + 4.0 * (spec.dequant_copies - 1)
    return weights * per_weight
