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

__all__ = ["Framework", "KERNELS", "get_framework", "framework_ids", "resolve_settings", "matmul_fraction"]

KERNELS = {
    "fused": "fused norm, attention and MLP kernels (Megatron / Transformer Engine, torch.compile): each layer keeps "
             "what Korthikanti et al. 2022 count",
    "eager": "PyTorch modules run op by op (transformers, litgpt, torchtune, torchtitan without compile): RMSNorm "
             "keeps an fp32 copy of its input and grouped K/V are repeated to the query heads before attention",
}

_FIELDS: dict[str, type | tuple[type, ...]] = {
    "kernels": str, "loss_chunk_tokens": int, "loss_chunks": int, "lora_dropout": (int, float),
    "fused_qkv": bool, "double_quant": bool, "quantize_head": bool, "dequant_copies": int, "keeps_last_graph": bool,
    "attention": str, "matmul_fraction": dict, "adapter_dtype": str,
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
                    key == "attention" and value not in IMPLEMENTATIONS) or (
                    key == "adapter_dtype" and value not in ("base", "fp32")):
                raise CatalogError(f"{path}: frameworks.{name}.{key}: {value!r} is not a valid value")
            if key == "matmul_fraction":
                value = _fractions(path, name, value)
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
                             "keeps_last_graph": False, "attention": "sdpa", "adapter_dtype": "base"}


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
    return out
