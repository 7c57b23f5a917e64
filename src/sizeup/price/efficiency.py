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

__all__ = ["Efficiency", "TENSOR_KINDS", "calibrated", "default_efficiency", "device_efficiency", "tensor_fraction"]

TENSOR_KINDS = ("matmul", "conv", "attention")


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

    def with_overrides(self, **changes) -> Efficiency:
        return replace(self, **changes)


def tensor_fraction(eff: Efficiency, kind: str, precision: str) -> Range:
    """Achieved fraction of the `precision` tensor peak for ops of `kind`."""
    return eff.tensor.get(f"{kind}@{precision}") or eff.tensor[kind]




def parse_efficiency(data: object, path: Path) -> Efficiency:
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: top level must be a mapping")
    unknown = sorted(set(data) - {"kind", "tensor", "vector", "memory", "overhead_s", "notes"})
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
        kind, _, precision = key.partition("@")
        if kind not in TENSOR_KINDS or not precision:
            raise CatalogError(f"{path}: unknown field 'tensor.{key}': expected {', '.join(TENSOR_KINDS)} "
                               f"or KIND@PRECISION")
        tensor[key], src = parse_entry(tensor_data[key], path, f"tensor.{key}", True)
        sources.append(src)
    vector, s1 = parse_entry(data.get("vector"), path, "vector", True)
    memory, s2 = parse_entry(data.get("memory"), path, "memory", True)
    overhead, s3 = parse_entry(data.get("overhead_s"), path, "overhead_s", False)
    return Efficiency(tensor=tensor, vector=vector, memory=memory, overhead_s=overhead,
                      origin=f"defaults for {data.get('kind', path.stem)} devices ({path.name})",
                      sources=tuple(sources + [s1, s2, s3]))


@lru_cache(maxsize=16)
def default_efficiency(device_kind: str) -> Efficiency:
    path = builtin_data_dir() / "efficiency" / f"{device_kind}.yaml"
    if not path.is_file():
        raise CatalogError(f"no efficiency defaults for device kind {device_kind!r} ({path} is missing)")
    return parse_efficiency(read_yaml(path), path)


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
    """The calibrated efficiency of `device` when one is in force, else the defaults of its kind."""
    return _CALIBRATED.get().get(device.id) or default_efficiency(device.kind)
