"""Which attention kernel runs, from the device, the compute dtype and the implementation asked for
(data/training/attention_kernels.yaml, each rule with its source).

FlashAttention-2 runs only on NVIDIA compute capability 8.0 (Ampere) or newer and only in fp16/bf16.
PyTorch SDPA tries flash, then its memory-efficient kernel (sm50+, fp32/fp16, bf16 from sm80), then the
math path. Eager attention, and SDPA where no fused backend applies, keeps the s² softmax output and
dropout masks per layer for backward (sizeup.workload.training.activations counts them).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sizeup.errors import CatalogError, ConfigError
from sizeup.hardware.catalog import builtin_data_dir, read_yaml
from sizeup.hardware.schema import DeviceSpec
from sizeup.ranges import Range

__all__ = ["IMPLEMENTATIONS", "AttentionPath", "attention_path", "compute_capability", "flash2_fraction"]

IMPLEMENTATIONS = ("sdpa", "eager", "flash2")


@dataclass(frozen=True, slots=True, kw_only=True)
class AttentionPath:
    implementation: str
    """What was asked for: sdpa, eager or flash2."""
    kernel: str
    """What runs: flash, mem_efficient or math."""
    note: str
    """For a training step: what runs and what it keeps for backward."""
    reason: str = ""
    """Why this kernel: the device's compute capability and the dtype, or the implementation asked for."""

    @property
    def fused(self) -> bool:
        """Only Q, K, V, the output and a log-sum-exp are kept: no s² tensors."""
        return self.kernel != "math"


@lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    path = builtin_data_dir() / "training" / "attention_kernels.yaml"
    data = read_yaml(path)
    if not isinstance(data, dict) or not all(isinstance(data.get(k), dict) for k in ("compute_capability", "kernels")):
        raise CatalogError(f"{path}: expected mappings 'compute_capability' and 'kernels'")
    return data


def compute_capability(device: DeviceSpec) -> float | None:
    """The NVIDIA compute capability of the device's architecture; None for other vendors or unknown."""
    if device.vendor != "nvidia":
        return None
    cc = _table()["compute_capability"].get(device.architecture or "")
    return None if cc is None else float(cc)


def _runs(kernel: str, cc: float, dtype: str) -> bool:
    rule = _table()["kernels"][kernel]
    if cc < float(rule["min_compute_capability"]) or dtype not in rule["dtypes"]:
        return False
    return not (dtype == "bf16" and cc < float(rule.get("bf16_min_compute_capability", 0)))


def attention_path(device: DeviceSpec, dtype: str, implementation: str = "sdpa") -> AttentionPath:
    """The kernel `implementation` runs on `device` at compute dtype `dtype` (fp32, fp16, bf16, fp8)."""
    if implementation not in IMPLEMENTATIONS:
        raise ConfigError(f"--attention {implementation!r}: expected one of {', '.join(IMPLEMENTATIONS)}")
    dtype = "bf16" if dtype == "fp8" else dtype  # Transformer Engine's fp8 recipes run attention in bf16
    if implementation == "eager":
        return AttentionPath(implementation="eager", kernel="math", reason="eager attention modules",
                             note="attention: eager (Q·Kᵀ, softmax, dropout op by op): the s² softmax output and "
                                  "dropout mask are kept per layer")
    cc = compute_capability(device)
    if cc is None:
        if device.vendor == "nvidia":
            raise ConfigError(f"{device.id}: no compute capability for architecture "
                              f"{device.architecture!r} in attention_kernels.yaml")
        return AttentionPath(implementation=implementation, kernel="flash", reason=f"a {device.vendor} {device.kind}",
                             note=f"attention: {implementation} on a {device.vendor} {device.kind}: assumed fused "
                                  "(PyTorch's flash for CPU / ROCm, the vendor's fused kernel); not checked per "
                                  "device")
    where = f"compute capability {cc:g}, {dtype}"
    if implementation == "flash2":
        if not _runs("flash", cc, dtype):
            raise ConfigError(f"--attention flash2 on {device.id} ({where}): FlashAttention-2 needs compute "
                              "capability 8.0+ and fp16/bf16; use sdpa or eager")
        return AttentionPath(implementation="flash2", kernel="flash", reason=where, note=f"attention: FlashAttention-2 ({where})")
    for kernel, label in (("flash", "flash"), ("mem_efficient", "memory-efficient")):
        if _runs(kernel, cc, dtype):
            return AttentionPath(implementation="sdpa", kernel=kernel, reason=where,
                                 note=f"attention: SDPA's {label} kernel ({where}): no s² tensors kept")
    return AttentionPath(implementation="sdpa", kernel="math", reason=f"{where}: no fused backend",
                         note=f"attention: SDPA's math path ({where}: no fused backend): the s² softmax output "
                              "and dropout mask are kept per layer")


def flash2_fraction(device: DeviceSpec) -> tuple[Range, str] | None:
    """The FlashAttention-2 library's achieved fraction of the tensor peak on `device` and its source, where
    attention_kernels.yaml gives one for the device's compute capability (Hopper: FA2 has no wgmma/TMA path);
    None: the device kind's generic attention fraction applies."""
    cc = compute_capability(device)
    entry = (_table().get("flash2_fraction") or {}).get(f"{cc:.1f}") if cc is not None else None
    if entry is None:
        return None
    try:
        return Range.parse(entry, f"attention_kernels.yaml flash2_fraction.{cc:.1f}"), str(entry.get("source", ""))
    except ValueError as e:
        raise CatalogError(str(e)) from None
