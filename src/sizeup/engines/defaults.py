"""The engine sizeup takes when none is named, per use (data/engines/defaults.yaml): one stated choice each, with
why, so every output that takes one can say so. Nothing else in sizeup names a default engine."""

from __future__ import annotations

from functools import lru_cache

from sizeup.errors import CatalogError
from sizeup.hardware.catalog import builtin_data_dir, read_yaml

__all__ = ["default_engine", "default_for_segment", "default_for_weights", "default_runtime", "planned_engines"]

USES = ("serving", "batch", "edge")


@lru_cache(maxsize=1)
def _defaults() -> dict:
    path = builtin_data_dir() / "engines" / "defaults.yaml"
    data = read_yaml(path)
    if not isinstance(data, dict) or not all(isinstance(data.get(k), dict) for k in ("estimate", "plan", "library")):
        raise CatalogError(f"{path}: expected mappings 'estimate', 'plan' and 'library'")
    return data


def default_for_segment(segment: str) -> tuple[str, str]:
    """(engine, why) of an estimate on a device of `segment` (hardware/segments.py) when no engine is named."""
    entry = _defaults()["estimate"].get(segment)
    if not isinstance(entry, dict) or not entry.get("engine"):
        raise CatalogError(f"data/engines/defaults.yaml: estimate names no engine for {segment!r} devices")
    return entry["engine"], f"the default on {segment} devices: {entry.get('why', '')}"


def default_for_weights(segment: str, weights: str) -> tuple[str, str]:
    """(engine, why) of an estimate on a device of `segment` with `weights` named and no engine: the segment's
    engine, or, where that engine cannot load those weights (llama.cpp and an NVFP4, FP8 or AWQ checkpoint), the
    segment's `otherwise` engine in defaults.yaml when it names one."""
    engine, why = default_for_segment(segment)
    entry = _defaults()["estimate"].get(segment) or {}
    other = entry.get("otherwise")
    if not other:
        return engine, why
    from sizeup.engines.base import engine_class
    from sizeup.errors import SizeupError
    from sizeup.formats import get_format

    try:
        fmt = get_format(weights)
    except SizeupError:
        return engine, why  # an unknown format: the estimate refuses it in its own words
    try:
        engine_class(engine).check_weights(fmt)
    except SizeupError:
        return other, (f"the default on {segment} devices for weights {engine} cannot load ({fmt.id}): "
                       f"{entry.get('otherwise_why', '')}")
    return engine, why


def default_engine(use: str) -> tuple[str, str]:
    """(engine, why) of a plan's `use` (serving, batch, edge), or 'library' (an InferenceConfig built in code)."""
    if use == "library":
        table = _defaults()["library"]
        return table["engine"], table["why"]
    if use not in USES:
        raise ValueError(f"no default engine for use {use!r}: expected one of {', '.join(USES)} or library")
    table = _defaults()["plan"]
    return table[use], table["why"]


def default_runtime() -> str:
    """The runtime (data/efficiency/overheads.yaml) a vision scenario's model runs under when it names none."""
    return _defaults()["plan"]["vision_runtime"]


def planned_engines(named: tuple[str, ...], use: str) -> tuple[tuple[str, ...], str | None]:
    """The engines a plan of `use` searches: those its scenario names, else the use's default with the assumption
    that says so (None when named)."""
    if named:
        return tuple(named), None
    engine, why = default_engine(use)
    return (engine,), f"engine {engine}: the scenario names none (data/engines/defaults.yaml: {why})"
