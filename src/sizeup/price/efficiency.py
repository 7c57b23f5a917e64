"""Achievable fractions of peak per device kind: defaults with provenance in data/efficiency/.

A calibration profile (measured on the user's device) overrides them field by field.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from sizeup.errors import CatalogError
from sizeup.hardware.catalog import builtin_data_dir, read_yaml
from sizeup.ranges import Range, parse_entry

__all__ = ["Efficiency", "GROUPED", "TENSOR_KINDS", "calibrated", "class_efficiency", "default_efficiency", "device_efficiency",
           "has_grouped", "table_efficiency", "tensor_fraction"]

TENSOR_KINDS = ("matmul", "conv", "attention")

GROUPED = "grouped"
"""Tensor kind of a mixture-of-experts layer's expert products (the ledger's `grouped_linear` ops: one grouped GEMM
over the experts the step's tokens were routed to). An engine whose MoE kernel reaches its own share of the peak
and of the bandwidth sets `grouped` (a fraction of the peak the op's precision is priced at) and `grouped_memory`
(price/execution.py, from the execution model's `moe_kernel`); without them the op is priced as a matmul."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Efficiency:
    """Fractions of peak (0..1] as ranges, and the fixed cost of launching one op."""

    tensor: dict[str, Range]
    """Per tensor op kind (matmul, conv, attention): achieved fraction of the dense tensor peak; an
    entry 'kind@precision' (matmul@fp8) overrides the kind at that precision's peak."""
    vector: Range
    memory: Range
    overhead_s: Range
    origin: str = "defaults"
    sources: tuple[str, ...] = field(default_factory=tuple)
    size_curve: tuple[tuple[float, float], ...] = ()
    """Measured (FLOPs of one matrix product, fraction of the peak it reaches) points, increasing in
    FLOPs: small products run below the peak. Empty: every product reaches the kind's efficiency."""
    by_architecture: dict[str, dict[str, Range]] = field(default_factory=dict)
    """Tensor entries of one architecture class (data/architectures.yaml id) that replace the kind's own
    for devices of that class: a class whose measured GEMM library reaches its own share of the peak."""
    by_vendor: dict[str, Range] = field(default_factory=dict)
    """Per-kernel host time of one vendor's devices of this kind, in place of `overhead_s`: the kind's own figure
    is one driver's (soc.yaml: Metal on Apple silicon, as its source measured it), while NVIDIA's SoCs run CUDA."""
    grouped_memory: Range | None = None
    """Fraction of the peak bandwidth a mixture-of-experts grouped GEMM streams its expert weights at (an engine's
    MoE kernel); None: the phase's `memory` fraction, as every other op."""
    attention_memory: Range | None = None
    """Fraction of the peak bandwidth a decode step's attention kernel streams the KV cache at (the ledger's attention
    ops' `weight_bytes`; an engine's decode attention kernel, price/execution.py), never above the phase's `memory`
    fraction; None: the phase's `memory` fraction."""

    def with_overrides(self, **changes) -> Efficiency:
        return replace(self, **changes)


def tensor_fraction(eff: Efficiency, kind: str, precision: str) -> Range:
    """Achieved fraction of the `precision` tensor peak for ops of `kind` (GROUPED: the engine's MoE kernel's
    own entry where it sets one, else the matmul's)."""
    if kind == GROUPED:
        own = eff.tensor.get(f"{kind}@{precision}") or eff.tensor.get(kind)
        return own or tensor_fraction(eff, "matmul", precision)
    return eff.tensor.get(f"{kind}@{precision}") or eff.tensor[kind]


def has_grouped(eff: Efficiency) -> bool:
    """Whether an engine's MoE kernel set the grouped GEMM's own compute fraction."""
    return any(key == GROUPED or key.startswith(f"{GROUPED}@") for key in eff.tensor)




def parse_efficiency(data: object, path: Path) -> Efficiency:
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: top level must be a mapping")
    unknown = sorted(set(data) - {"kind", "tensor", "vector", "memory", "overhead_s", "by_architecture", "by_vendor",
                                    "notes"})
    if unknown:
        raise CatalogError(f"{path}: unknown field '{unknown[0]}'")
    tensor_data = data.get("tensor") or {}
    tensor, sources = {}, []
    for kind in TENSOR_KINDS:
        if kind not in tensor_data:
            raise CatalogError(f"{path}: missing field 'tensor.{kind}'")
        tensor[kind], src = parse_entry(tensor_data[kind], path, f"tensor.{kind}", True)
        sources.append(src)
    for key in sorted(set(tensor_data) - set(TENSOR_KINDS)):
        tensor[key], src = _tensor_entry(tensor_data, key, path, "tensor")
        sources.append(src)
    by_architecture: dict[str, dict[str, Range]] = {}
    classes = data.get("by_architecture") or {}
    if not isinstance(classes, dict):
        raise CatalogError(f"{path}: 'by_architecture' must map an architecture id to its 'tensor' entries")
    for arch, entry in classes.items():
        if not isinstance(entry, dict) or set(entry) - {"tensor", "notes"} or not isinstance(entry.get("tensor"), dict):
            raise CatalogError(f"{path}: 'by_architecture.{arch}' must hold a 'tensor' mapping (and optional notes)")
        by_architecture[arch] = {}
        for key in entry["tensor"]:
            by_architecture[arch][key], src = _tensor_entry(entry["tensor"], key, path, f"by_architecture.{arch}.tensor")
            sources.append(src)
    vector, s1 = parse_entry(data.get("vector"), path, "vector", True)
    memory, s2 = parse_entry(data.get("memory"), path, "memory", True)
    overhead, s3 = parse_entry(data.get("overhead_s"), path, "overhead_s", False)
    by_vendor = _vendor_overheads(data.get("by_vendor") or {}, path, sources)
    return Efficiency(tensor=tensor, vector=vector, memory=memory, overhead_s=overhead,
                      origin=f"defaults for {data.get('kind', path.stem)} devices ({path.name})",
                      sources=tuple(sources + [s1, s2, s3]), by_architecture=by_architecture, by_vendor=by_vendor)


def _vendor_overheads(vendors: object, path: Path, sources: list[str]) -> dict[str, Range]:
    """`by_vendor: {VENDOR: {overhead_s: ENTRY}}`, or `{VENDOR: {overhead_s_of: KIND, basis, source, retrieved}}`: that
    device kind's own per-kernel figure (NVIDIA's SoCs launch through the same CUDA driver as its GPUs)."""
    if not isinstance(vendors, dict):
        raise CatalogError(f"{path}: 'by_vendor' must map a vendor to its 'overhead_s'")
    out = {}
    for vendor, entry in vendors.items():
        if not isinstance(entry, dict) or len({"overhead_s", "overhead_s_of"} & set(entry)) != 1:
            raise CatalogError(f"{path}: 'by_vendor.{vendor}' must hold 'overhead_s' or 'overhead_s_of: KIND'")
        if "overhead_s" in entry:
            out[vendor], src = parse_entry(entry["overhead_s"], path, f"by_vendor.{vendor}.overhead_s", False)
        else:
            for key in ("basis", "source", "retrieved"):
                if not entry.get(key):
                    raise CatalogError(f"{path}: 'by_vendor.{vendor}' needs '{key}' beside overhead_s_of")
            out[vendor] = default_efficiency(str(entry["overhead_s_of"])).overhead_s
            src = str(entry["source"])
        sources.append(src)
    return out


def _tensor_entry(table: dict, key: str, path: Path, where: str) -> tuple[Range, str]:
    kind, _, precision = key.partition("@")
    if kind not in TENSOR_KINDS or (key != kind and not precision):
        raise CatalogError(f"{path}: unknown field '{where}.{key}': expected {', '.join(TENSOR_KINDS)} "
                           f"or KIND@PRECISION")
    return parse_entry(table[key], path, f"{where}.{key}", True)


@lru_cache(maxsize=16)
def default_efficiency(device_kind: str) -> Efficiency:
    path = builtin_data_dir() / "efficiency" / f"{device_kind}.yaml"
    if not path.is_file():
        raise CatalogError(f"no efficiency defaults for device kind {device_kind!r} ({path} is missing)")
    return parse_efficiency(read_yaml(path), path)


@lru_cache(maxsize=64)
def class_efficiency(device_kind: str, architecture: str | None, vendor: str | None = None) -> Efficiency:
    """The kind's defaults with the tensor entries of `architecture`'s class in place of its own, and `vendor`'s
    per-kernel host time where the kind states one (the kind's defaults themselves where neither differs)."""
    base = default_efficiency(device_kind)
    own = base.by_architecture.get(architecture or "")
    launch = base.by_vendor.get(vendor or "")
    if not own and launch is None:
        return base
    origin = base.origin[:-1] + (f", {architecture} class" if own else "") + (f", {vendor} launch" if launch else "")
    return replace(base, tensor={**base.tensor, **(own or {})}, by_architecture={}, by_vendor={},
                   overhead_s=launch or base.overhead_s, origin=f"{origin})")


def table_efficiency(device) -> Efficiency:
    """The table efficiency of `device` (its kind's defaults, with its architecture class's entries and its
    vendor's per-kernel time): what an efficiency in force is compared with to tell whether it is still the table's."""
    return class_efficiency(device.kind, device.architecture, device.vendor)


_CALIBRATED: ContextVar[Mapping[str, Efficiency]] = ContextVar("sizeup_calibrated", default={})


@contextmanager
def calibrated(by_device: Mapping[str, Efficiency]) -> Iterator[None]:
    """Within the block, devices with these ids are priced with these (measured) efficiencies instead
    of their kind's defaults: how `--calibration NAME` reaches estimate, train and plan."""
    token = _CALIBRATED.set({**_CALIBRATED.get(), **by_device})
    try:
        yield
    finally:
        _CALIBRATED.reset(token)


def device_efficiency(device) -> Efficiency:
    """The calibrated efficiency of `device` when one is in force, else the defaults of its kind (with its
    architecture class's tensor entries)."""
    return _CALIBRATED.get().get(device.id) or table_efficiency(device)
