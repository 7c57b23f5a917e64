"""Which weight formats a serving engine loads on which devices (data/efficiency/engine_formats.yaml, each engine with its
source): what `sizeup fit DEVICE` tries, so that a row never shows an engine running a format it cannot load
on that device."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sizeup.errors import CatalogError, ConfigError
from sizeup.hardware.catalog import builtin_data_dir, read_yaml
from sizeup.hardware.schema import DeviceSpec

__all__ = ["EngineFormats", "Trainer", "engine_formats", "engines_on", "formats_on", "trainers_on"]

_RULE_KEYS = ("kinds", "vendors", "architectures", "except_devices")


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineFormats:
    engine: str
    label: str
    runs_on: dict[str, tuple[str, ...]]
    formats: dict[str, dict[str, tuple[str, ...]]]
    """Most precise first; each with its own device rule (empty: wherever the engine runs)."""
    note: str
    source: str
    retrieved: str

    def runs(self, device: DeviceSpec) -> bool:
        return _matches(self.runs_on, device)

    def formats_for(self, device: DeviceSpec) -> tuple[str, ...]:
        """The formats this engine loads on `device`, most precise first; fp8 only where the device has an fp8
        peak."""
        if not self.runs(device):
            return ()
        return tuple(f for f, rule in self.formats.items() if _matches(rule, device)
                     and (f != "fp8" or "fp8" in device.peak_flops_per_s))


@dataclass(frozen=True, slots=True, kw_only=True)
class Trainer:
    """A fine-tuning stack and the devices it runs on."""

    id: str
    label: str
    runs_on: dict[str, tuple[str, ...]]
    note: str
    source: str
    retrieved: str

    def runs(self, device: DeviceSpec) -> bool:
        return _matches(self.runs_on, device)


def _matches(rule: dict[str, tuple[str, ...]], device: DeviceSpec) -> bool:
    if device.id in rule.get("except_devices", ()):
        return False
    checks = {"kinds": device.kind, "vendors": device.vendor, "architectures": device.architecture}
    return all(value in rule[key] for key, value in checks.items() if key in rule)


@lru_cache(maxsize=1)
def _table() -> tuple[dict[str, EngineFormats], dict[str, Trainer]]:
    path = builtin_data_dir() / "efficiency" / "engine_formats.yaml"
    data = read_yaml(path)
    if not isinstance(data, dict) or not all(isinstance(data.get(k), dict) for k in ("engines", "trainers")):
        raise CatalogError(f"{path}: expected mappings 'engines' and 'trainers'")
    engines, trainers = {}, {}
    for section in ("engines", "trainers"):
        for name, entry in data[section].items():
            where = f"{path}: {section}.{name}"
            if not isinstance(entry, dict):
                raise CatalogError(f"{where}: expected a mapping")
            for key in ("source", "retrieved"):
                if not entry.get(key):
                    raise CatalogError(f"{where}: needs '{key}'")
            common = dict(label=str(entry.get("label", name)), runs_on=_rule(entry.get("runs_on") or {}, where),
                          note=str(entry.get("note", "")), source=str(entry["source"]),
                          retrieved=str(entry["retrieved"]))
            if section == "trainers":
                trainers[name] = Trainer(id=name, **common)
                continue
            if not isinstance(entry.get("formats"), dict) or not entry["formats"]:
                raise CatalogError(f"{where}: expected a mapping 'formats'")
            engines[name] = EngineFormats(
                engine=name, formats={f: _rule(rule or {}, f"{where}.formats.{f}") for f, rule in entry["formats"].items()},
                **common)
    return engines, trainers


def engine_formats() -> dict[str, EngineFormats]:
    return _table()[0]


def trainers_on(device: DeviceSpec) -> list[Trainer]:
    return [t for t in _table()[1].values() if t.runs(device)]


def _rule(data: Any, where: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(data, dict) or set(data) - set(_RULE_KEYS):
        raise CatalogError(f"{where}: expected a mapping of {', '.join(_RULE_KEYS)}")
    return {k: tuple(str(v) for v in values) for k, values in data.items()}


def engines_on(device: DeviceSpec, engine: str | None = None) -> list[EngineFormats]:
    """The engines that run on `device` (or `engine` alone, refused when unknown)."""
    table = engine_formats()
    if engine is not None and engine not in table:
        raise ConfigError(f"--engine {engine!r}: sizeup fit knows the formats of {', '.join(table)}")
    return [e for name, e in table.items() if (engine is None or name == engine) and e.runs(device)]


def formats_on(device: DeviceSpec, engine: str) -> tuple[str, ...]:
    return engine_formats()[engine].formats_for(device)
