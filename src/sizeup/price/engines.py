"""Inference engine profiles (data/efficiency/engines.yaml): memory policy and per-kernel overheads of
vLLM, llama.cpp, Hugging Face transformers, TensorRT-LLM and plain TensorRT engines, each value with its
source. An engine may name a runtime of data/efficiency/overheads.yaml (`runtime: tensorrt`): its per-op
host time and the op kinds it fuses then come from there (price/overhead.py), not from a copy.

A key missing from the file falls back to the device kind's generic defaults, and the result says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from sizeup.errors import CatalogError, ConfigError
from sizeup.hardware.catalog import builtin_data_dir, read_yaml
from sizeup.ranges import Range

__all__ = ["EngineProfile", "get_engine", "ENGINES"]

ENGINES = ("hf", "vllm", "llama.cpp", "tensorrt-llm", "tensorrt")


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineProfile:
    id: str
    description: str = ""
    values: dict[str, float] = field(default_factory=dict)
    ranges: dict[str, Range] = field(default_factory=dict)
    sources: tuple[str, ...] = ()
    runtime: str | None = None
    """A runtime of data/efficiency/overheads.yaml whose per-op cost and fusions this engine runs with."""

    def value(self, key: str, default: float) -> float:
        return self.values.get(key, default)

    def range(self, key: str) -> Range | None:
        return self.ranges.get(key)


@lru_cache(maxsize=1)
def _profiles() -> dict[str, EngineProfile]:
    path = builtin_data_dir() / "efficiency" / "engines.yaml"
    if not path.is_file():
        return {name: EngineProfile(id=name) for name in ENGINES}
    data = read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("engines"), dict):
        raise CatalogError(f"{path}: expected a mapping 'engines'")
    out = {}
    for name, entries in data["engines"].items():
        if not isinstance(entries, dict):
            raise CatalogError(f"{path}: engines.{name} must be a mapping")
        values, ranges, sources = {}, {}, []
        for key, entry in entries.items():
            if key in ("description", "runtime"):
                continue
            if not isinstance(entry, dict) or not entry.get("source"):
                raise CatalogError(f"{path}: engines.{name}.{key} needs a value or range and a source")
            if "value" in entry:
                values[key] = float(entry["value"])
            else:
                try:
                    ranges[key] = Range.parse(entry, f"{path}: engines.{name}.{key}")
                except ValueError as e:
                    raise CatalogError(str(e)) from None
            sources.append(f"{key}: {entry['source']} (read {entry.get('retrieved', '?')})")
        runtime = entries.get("runtime")
        if runtime is not None and not isinstance(runtime, str):
            raise CatalogError(f"{path}: engines.{name}.runtime must name a runtime of overheads.yaml")
        out[name] = EngineProfile(id=name, description=str(entries.get("description", "")), values=values,
                                  ranges=ranges, sources=tuple(sources), runtime=runtime)
    for name in ENGINES:
        out.setdefault(name, EngineProfile(id=name))
    return out


def get_engine(name: str) -> EngineProfile:
    key = str(name).strip().lower().replace("llamacpp", "llama.cpp").replace("trtllm", "tensorrt-llm")
    profiles = _profiles()
    if key not in profiles:
        raise ConfigError(f"unknown engine {name!r}: expected one of {', '.join(sorted(profiles))}")
    return profiles[key]
