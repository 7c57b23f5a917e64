"""Whether an estimate's verdict holds on the other memory sizes of the device the user named.

A device sold in several memory sizes is one catalog entry per size: the sizes its file lists
(`memory_options`, hardware/variants.py: `<id>-<N>gb`, each `variant_of` the file's device) or, where the
sizes are different files of one product (`variant_group`), the ones the name did not tell apart (the
resolver's `resolved_as` note). When the name picks no size, the estimate says which it assumed, and the
same configuration (engine, format, batch, lengths) is estimated on each other size for its three-way
verdict (workload/device_fit.py `fit_verdict`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

__all__ = ["VariantFit", "memory_variants", "variant_fits", "assumed_note", "variants_line"]


@dataclass(frozen=True, slots=True)
class VariantFit:
    device: str
    memory_bytes: int
    fit: str
    gpu_layers: int | None = None
    """Layers on the GPU where fewer than all run there (an engine's own split, Ollama's scheduler, or --gpu-layers);
    None: every layer on the GPU (or no estimate)."""
    layers: int = 0
    decode_tokens_per_s: float | None = None
    """The estimate's typical decode rate per sequence on this size (None: unknown or no estimate)."""

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "memory_bytes": self.memory_bytes, "fit": self.fit,
                "gpu_layers": self.gpu_layers, "layers": self.layers,
                "decode_tokens_per_s": self.decode_tokens_per_s}


def _of(device, estimate, verdict: str) -> VariantFit:
    """`estimate`'s verdict on `device`, with the layers it left off the GPU and its decode rate."""
    layers = estimate.arch.num_layers
    placed = estimate.config.gpu_layers
    rate = None if estimate.decode is None else estimate.decode.tokens_per_s  # --output 0: no decode
    return VariantFit(device.id, device.memory_bytes, verdict,
                      gpu_layers=placed if placed is not None and placed < layers else None, layers=layers,
                      decode_tokens_per_s=None if rate is None else rate.typical)


def _size(memory_bytes: int) -> str:
    return f"{memory_bytes / 2**30:g}"


def memory_variants(catalog, device, name: str) -> list:
    """The catalog's memory sizes of `device` (itself included, smallest first) when `name` picks none; [] when
    it picks one or the device comes in one size."""
    from sizeup.hardware.resolve import _VARIANT_WORD, name_tokens

    if any(_VARIANT_WORD.match(t) for t in name_tokens(name)):
        return []
    base = device.variant_of or device.id
    same = [d for d in catalog.devices.values() if d.power_mode == device.power_mode
            and (d.id == base or d.variant_of == base)]
    if len(same) < 2 and device.resolved_as and device.variant_group:
        same = [d for d in catalog.devices.values() if d.variant_group == device.variant_group
                and d.power_mode == device.power_mode and not d.variant_of and d.id in device.resolved_as
                or d.id == device.id]
    if len({d.memory_bytes for d in same}) < 2:
        return []
    return sorted(same, key=lambda d: (d.memory_bytes, d.id))


def variant_fits(result, variants: list, estimate_on) -> tuple[VariantFit, ...]:
    """Each variant's verdict for `result`'s configuration: `estimate_on(device)` estimates it there (the
    assumed device's own verdict is `result`'s)."""
    from sizeup.errors import SizeupError
    from sizeup.workload.device_fit import fit_verdict

    out = []
    for d in variants:
        if d.id == result.device.id:
            out.append(_of(d, result, fit_verdict(result).verdict))
            continue
        try:
            estimate = estimate_on(d)
        except SizeupError as exc:
            out.append(VariantFit(d.id, d.memory_bytes, f"unknown ({exc})"))
            continue
        out.append(_of(d, estimate, fit_verdict(estimate).verdict))
    return tuple(out)


def assumed_note(device, fits: tuple[VariantFit, ...]) -> str:
    """Which size the estimate took, and the others the catalog lists."""
    others = [f for f in fits if f.device != device.id]
    return (f"{device.id}: the {_size(device.memory_bytes)} GB model assumed (no memory size named); the catalog "
            f"also lists {', '.join(f'{f.device} ({_size(f.memory_bytes)} GB)' for f in others)}: name one to "
            f"pick it")


def _rate(x: float | None) -> str:
    return "unknown" if x is None else f"{x:,.1f}"


def variants_line(fits: tuple[VariantFit, ...]) -> str:
    """One line when the verdict differs across the sizes ('fits on the 24/32 GB models; may not fit on the
    16 GB model') or some size runs layers on the CPU (an engine that splits the model itself, Ollama, fits nearly
    everywhere: the line says how many layers each size leaves to the CPU and the decode rate that gives, beside a
    size that holds every layer), else empty."""
    parts: list[str] = []
    if len({f.fit for f in fits}) > 1:
        by: dict[str, list[str]] = {}
        for f in sorted(fits, key=lambda f: -f.memory_bytes):
            by.setdefault(f.fit, []).append(_size(f.memory_bytes))
        parts = [f"{verdict} on the {'/'.join(reversed(sizes))} GB model{'s' if len(sizes) > 1 else ''}"
                 for verdict, sizes in by.items()]
    split = [f for f in fits if f.gpu_layers is not None]
    if not split:
        return "; ".join(parts)
    whole = max((f for f in fits if f.gpu_layers is None and f.decode_tokens_per_s is not None),
                key=lambda f: f.memory_bytes, default=None)
    for f in sorted(split, key=lambda f: f.memory_bytes):
        rate = ("decode unknown (their CPU share is unpriced: name the host with --cpu NAME)"
                if f.decode_tokens_per_s is None else f"decode {_rate(f.decode_tokens_per_s)} tokens/s")
        parts.append(f"on the {_size(f.memory_bytes)} GB model {f.layers - f.gpu_layers} of {f.layers} layers run "
                     f"on the CPU: {rate}"
                     + ("" if whole is None else f" against {_rate(whole.decode_tokens_per_s)} with every layer on "
                                                 f"the GPU of the {_size(whole.memory_bytes)} GB model"))
    return "; ".join(parts)
