"""Usable memory: what a framework really gets of a device (data/efficiency/usable_memory.yaml).

usable = memory · (1 − reserve_fraction) − reserve_bytes, per device class (HBM GPUs, GDDR cards with
ECC on, GeForce cards, Apple and Jetson shared memory, CPUs, TPU/NPU runtimes). A high reserve gives
the low end of the usable range.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sizeup.errors import CatalogError
from sizeup.hardware.catalog import builtin_data_dir, read_yaml
from sizeup.hardware.schema import DeviceSpec
from sizeup.ranges import Range

__all__ = ["UsableMemory", "usable_memory"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryClass:
    id: str
    kinds: tuple[str, ...]
    memory_type_prefixes: tuple[str, ...]
    vendors: tuple[str, ...]
    ecc: bool | None
    reserve_fraction: Range
    reserve_bytes: Range
    basis: str
    source: str
    retrieved: str

    def matches(self, device: DeviceSpec) -> bool:
        if self.kinds and device.kind not in self.kinds:
            return False
        if self.vendors and device.vendor not in self.vendors:
            return False
        if self.memory_type_prefixes and not any(
                (device.memory_type or "").upper().startswith(p.upper()) for p in self.memory_type_prefixes):
            return False
        return self.ecc is None or device.ecc_default == self.ecc


@dataclass(frozen=True, slots=True, kw_only=True)
class UsableMemory:
    bytes: Range
    class_id: str
    basis: str
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {"bytes": self.bytes.to_dict(), "class": self.class_id, "basis": self.basis, "source": self.source}


def _as_tuple(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    return tuple(str(v) for v in (value if isinstance(value, list) else [value]))


@lru_cache(maxsize=1)
def memory_classes() -> tuple[MemoryClass, ...]:
    path = builtin_data_dir() / "efficiency" / "usable_memory.yaml"
    data = read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("classes"), list):
        raise CatalogError(f"{path}: expected a mapping with a list 'classes'")
    out = []
    for i, item in enumerate(data["classes"]):
        where = f"{path}: classes[{i}]"
        try:
            applies = item.get("applies_to") or {}
            out.append(MemoryClass(
                id=str(item["id"]), kinds=_as_tuple(applies.get("kind")),
                memory_type_prefixes=_as_tuple(applies.get("memory_type_prefix")),
                vendors=_as_tuple(applies.get("vendor")), ecc=applies.get("ecc"),
                reserve_fraction=Range.parse(item["reserve_fraction"], f"{where}.reserve_fraction"),
                reserve_bytes=Range.parse(item["reserve_bytes"], f"{where}.reserve_bytes"),
                basis=str(item["basis"]), source=str(item["source"]), retrieved=str(item["retrieved"]),
            ))
        except (KeyError, TypeError, AttributeError) as e:
            raise CatalogError(f"{where}: missing or malformed field {e}") from None
        except ValueError as e:
            raise CatalogError(str(e)) from None
    return tuple(out)


def usable_memory(device: DeviceSpec) -> UsableMemory:
    for cls in memory_classes():
        if cls.matches(device):
            m = device.memory_bytes
            low = m * (1 - cls.reserve_fraction.high) - cls.reserve_bytes.high
            typical = m * (1 - cls.reserve_fraction.typical) - cls.reserve_bytes.typical
            high = m * (1 - cls.reserve_fraction.low) - cls.reserve_bytes.low
            return UsableMemory(bytes=Range(max(low, 0), max(typical, 0), max(high, 0)), class_id=cls.id,
                                basis=cls.basis, source=f"{cls.source} (read {cls.retrieved})")
    raise CatalogError(f"no usable-memory class matches device {device.id!r} (kind {device.kind}, memory type "
                       f"{device.memory_type}): add one to usable_memory.yaml")
