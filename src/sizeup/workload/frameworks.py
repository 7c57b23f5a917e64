"""Training framework profiles (data/training/frameworks.yaml): the settings a framework's own code fixes, such as
eager or fused kernels, how the loss is chunked and how QLoRA is wired, each with its source.

`sizeup train --framework NAME` takes them as defaults; options given on the command line win.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sizeup.errors import CatalogError, ConfigError
from sizeup.hardware.catalog import builtin_data_dir, read_yaml
from sizeup.price.attention_kernels import IMPLEMENTATIONS
from sizeup.ranges import Range

__all__ = ["Framework", "KERNELS", "LOSSES", "RECOMPUTE", "OPTIMIZERS", "get_framework", "framework_ids",
           "resolve_settings", "matmul_fraction", "allocator_reserve", "DEFAULT_FINETUNE", "framework_for"]

KERNELS = {
    "fused": "fused norm, attention and MLP kernels (Megatron / Transformer Engine, torch.compile): each layer keeps "
             "what Korthikanti et al. 2022 count",
    "eager": "PyTorch modules run op by op (transformers, litgpt, torchtune, torchtitan without compile): RMSNorm "
             "keeps an fp32 copy of its input and grouped K/V are repeated to the query heads before attention; each "
             "norm, rotary and activation is several memory-bound kernels (data/engines/hf.yaml eager_kernels)",
    "liger": "Liger Kernel's Triton RMSNorm, RoPE, SwiGLU and fused linear cross-entropy patched into transformers' "
             "modules (apply_liger_kernel_to_*): one kernel per op, what the fused count keeps",
    "unsloth": "Unsloth's Triton RMSNorm, RoPE, SwiGLU and LoRA kernels (fast_lora: adapter products fused with the "
               "base's) and its chunked cross-entropy: one kernel per op, what the fused count keeps",
}

LOSSES = {
    "chunked": "the bf16 logits are kept whole; the cross-entropy upcasts one chunk at a time to fp32 and keeps its "
               "log-softmax (2 + 8 / chunks bytes per logit; --loss-chunks, litgpt 128 positions, torchtune 8 chunks)",
    "upcast": "transformers' ForCausalLMLoss: logits.float() then cross_entropy over all positions at once; at the "
              "start of backward the fp32 log-softmax, its gradient and the input gradient coexist: 12 bytes per logit",
    "native": "cross-entropy in the logits' own dtype (no upcast): output, its gradient and the input gradient, 3 x 2 "
              "bytes per logit",
    "inplace": "a Triton cross-entropy that writes the gradient into transformers' upcast, shifted fp32 logits in "
               "place (Unsloth 2024's fast_cross_entropy_loss as fms-acceleration's fused ops patch it): 8 bytes per "
               "logit",
    "fused-linear": "the head and the loss run over a chunk of positions at a time and the full logits never exist "
                    "(Liger's fused linear cross-entropy, Unsloth's fused CE, TRL's chunked_nll, Cut Cross-Entropy)",
}

DEFAULT_FINETUNE = "trl"
"""The profile a LoRA / QLoRA / DoRA run takes without --framework: TRL's SFTTrainer over transformers, PEFT and
bitsandbytes, the stack the PEFT and TRL docs fine-tune with (PEFT's QLoRA and LoRA guides, TRL's SFTTrainer docs,
the QLoRA paper's artidoro/qlora over the same libraries); LLaMA-Factory and axolotl run the same Trainer and modules.
A full run without it keeps sizeup's own settings (fused kernels: pre-training stacks)."""

_ADAPTER_METHODS = ("lora", "qlora", "dora")

RECOMPUTE = ("none", "selective", "selective-op", "full", "offload")
OPTIMIZERS = ("adamw", "adam", "adamw-8bit", "sgd", "adafactor", "lion")

_FIELDS: dict[str, type | tuple[type, ...]] = {
    "kernels": str, "loss_chunk_tokens": int, "loss_chunks": int, "lora_dropout": (int, float),
    "fused_qkv": bool, "double_quant": bool, "quantize_head": bool, "dequant_copies": int, "keeps_last_graph": bool,
    "attention": str, "matmul_fraction": dict, "adapter_dtype": str,
    "loss": str, "recompute": str, "optimizer": str, "mixed_precision": str, "grads_freed": bool,
    "kbit_fp32_params": bool, "allocator_reserve": (dict, str), "adapter_kernels": str, "packing": bool,
}
_CHOICES: dict[str, tuple[str, ...]] = {
    "loss": tuple(LOSSES), "recompute": RECOMPUTE, "optimizer": OPTIMIZERS, "mixed_precision": ("amp", "master"),
    "adapter_kernels": ("peft", "fused"), "adapter_dtype": ("base", "fp32"),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Framework:
    id: str
    description: str
    settings: dict[str, Any]
    """Only what the profile states; a missing key leaves sizeup's own default."""
    sources: tuple[str, ...]

    def get(self, key: str, default: Any = None) -> Any:
        return self.settings.get(key, default)

    def loss_chunks_for(self, seq: int) -> int | None:
        if "loss_chunk_tokens" in self.settings:
            return max(1, -(-seq // int(self.settings["loss_chunk_tokens"])))
        return self.settings.get("loss_chunks")


@lru_cache(maxsize=1)
def _profiles() -> dict[str, Framework]:
    path = builtin_data_dir() / "training" / "frameworks.yaml"
    data = read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("frameworks"), dict):
        raise CatalogError(f"{path}: expected a mapping 'frameworks'")
    out: dict[str, Framework] = {}
    for name, entries in data["frameworks"].items():
        if not isinstance(entries, dict):
            raise CatalogError(f"{path}: frameworks.{name} must be a mapping")
        settings: dict[str, Any] = {}
        sources = []
        for key, entry in entries.items():
            if key in ("description", "retrieved"):
                continue
            if key not in _FIELDS:
                raise CatalogError(f"{path}: frameworks.{name}.{key}: unknown setting (expected one of "
                                   f"{', '.join(_FIELDS)})")
            if not isinstance(entry, dict) or "value" not in entry or not entry.get("source"):
                raise CatalogError(f"{path}: frameworks.{name}.{key} needs a value and a source")
            value = entry["value"]
            if not isinstance(value, _FIELDS[key]) or (key == "kernels" and value not in KERNELS) or (
                    key == "attention" and value not in IMPLEMENTATIONS) or value not in _CHOICES.get(key, (value,)):
                raise CatalogError(f"{path}: frameworks.{name}.{key}: {value!r} is not a valid value")
            if key == "matmul_fraction":
                value = _fractions(path, name, value)
            if key == "allocator_reserve":
                value = value if value == "observed" else _reserve(path, name, value)
            settings[key] = value
            sources.append(f"{key}: {entry['source']} (read {entries.get('retrieved', '?')})")
        out[name] = Framework(id=name, description=str(entries.get("description", "")), settings=settings,
                              sources=tuple(sources))
    return out


def _fractions(path, name: str, value: dict) -> dict[float, Range]:
    """matmul_fraction: {compute capability: {low, typical, high}} -> {cc: Range}."""
    out = {}
    for cc, levels in value.items():
        try:
            out[float(cc)] = Range(*(float(levels[lv]) for lv in ("low", "typical", "high")))
        except (KeyError, TypeError, ValueError) as exc:
            raise CatalogError(f"{path}: frameworks.{name}.matmul_fraction.{cc}: expected low <= typical <= high "
                               f"fractions ({exc})") from None
        if not 0 < out[float(cc)].low <= out[float(cc)].high <= 1:
            raise CatalogError(f"{path}: frameworks.{name}.matmul_fraction.{cc}: fractions must lie in (0, 1]")
    return out


def _reserve(path, name: str, value: dict | str) -> Range:
    """allocator_reserve: {low, typical, high} fractions of the peak allocated memory the caching allocator holds on
    top (what torch.cuda.max_memory_reserved reports beyond max_memory_allocated)."""
    try:
        out = Range(*(float(value[lv]) for lv in ("low", "typical", "high")))  # type: ignore[index]
    except (KeyError, TypeError, ValueError) as exc:
        raise CatalogError(f"{path}: frameworks.{name}.allocator_reserve: expected low <= typical <= high fractions "
                           f"({exc})") from None
    if not 0 <= out.low <= out.typical <= out.high <= 2:
        raise CatalogError(f"{path}: frameworks.{name}.allocator_reserve: fractions must rise from low to high in [0, 2]")
    return out


def allocator_reserve(framework: str | None) -> Range | str | None:
    """The caching allocator's reserve over the peak allocated memory in `framework`'s training loop, where its
    profile states one: a range, or "observed" (data/training/allocator_reserve.yaml, by regime); else None
    (sizeup's default, data/engines/pytorch.yaml allocator_overhead_fraction)."""
    return get_framework(framework).get("allocator_reserve") if framework else None


def matmul_fraction(framework: str | None, cc: float | None) -> Range | None:
    """The fp16/bf16 weight-product fraction of the dense tensor peak that `framework`'s pinned software stack
    (its container's cuBLAS) reaches on compute capability `cc`, where its profile states one; else None."""
    if not framework or cc is None:
        return None
    return get_framework(framework).get("matmul_fraction", {}).get(float(cc))


def framework_ids() -> tuple[str, ...]:
    return tuple(sorted(_profiles()))


def get_framework(name: str) -> Framework:
    key = str(name).strip().lower()
    profiles = _profiles()
    if key not in profiles:
        raise ConfigError(f"--framework {name!r}: expected one of {', '.join(sorted(profiles))}")
    return profiles[key]


_DEFAULTS: dict[str, Any] = {"kernels": "fused", "loss_chunks": 1, "lora_dropout": 0.0, "fused_qkv": False,
                             "double_quant": True, "quantize_head": False, "dequant_copies": 1,
                             "keeps_last_graph": False, "attention": "sdpa", "adapter_dtype": "base",
                             "loss": None, "recompute": None, "optimizer": None, "mixed_precision": "master",
                             "grads_freed": False, "kbit_fp32_params": False, "adapter_kernels": "peft",
                             "packing": None}
"""sizeup's own default of each framework-dependent setting; loss None: from the kernels (fused-linear under liger
and unsloth), else chunked; recompute, optimizer and packing None: the run's own (TrainingConfig's) unless given or
stated by the framework."""


def framework_for(framework: str | None, method: str) -> tuple[str | None, str | None]:
    """The framework profile a run takes and, when it was not named, why: (name, note or None)."""
    method = getattr(method, "value", method)
    if framework or method not in _ADAPTER_METHODS:
        return framework, None
    return DEFAULT_FINETUNE, (f"framework: {DEFAULT_FINETUNE} ({_profiles()[DEFAULT_FINETUNE].description}), the "
                              f"default for a {method} run without --framework; --framework NAME picks another "
                              f"({', '.join(framework_ids())})")


def resolve_settings(framework: str | None, seq: int, **given: Any) -> dict[str, Any]:
    """The framework-dependent settings of a training run: a value given (not None) wins, then the
    framework's profile, then sizeup's own default. Keys: those of _DEFAULTS."""
    unknown = set(given) - set(_DEFAULTS)
    if unknown:
        raise TypeError(f"resolve_settings: unknown settings {sorted(unknown)}")
    fw = get_framework(framework) if framework else None
    out: dict[str, Any] = {}
    for key, default in _DEFAULTS.items():
        if given.get(key) is not None:
            out[key] = given[key]
        elif fw is not None and key == "loss_chunks" and fw.loss_chunks_for(seq) is not None:
            out[key] = fw.loss_chunks_for(seq)
        elif fw is not None and key in fw.settings:
            out[key] = fw.settings[key]
        else:
            out[key] = default
    if out["loss"] is None:
        out["loss"] = "fused-linear" if out["kernels"] in ("liger", "unsloth") else "chunked"
    return out
