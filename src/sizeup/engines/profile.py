"""An engine's sourced settings (data/engines/NAME.yaml) at one release.

A file holds the engine's `description`, the `runtime` of data/efficiency/overheads.yaml it runs its kernels with
(if any), its `versions` (the first release its data describes, the current release sizeup takes by default and
the source that names it) and its `settings`: each a single sourced value or {low, typical, high} range, or, for a
setting that changed between releases, a list of such entries each with `releases: [FIRST, LAST]` (the releases
it was read for; LAST null: through the current one). A release no entry was read for takes the entry of the
latest release before it (or the first entry, before them all), and the profile says so in its `notes`.

Versions compare component by component (`0.10` after `0.9`; dates `2024-10-10` the same way); a release series
`0.10` covers `0.10.x`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, NamedTuple

from sizeup.errors import CatalogError, ConfigError
from sizeup.hardware.catalog import builtin_data_dir, read_yaml
from sizeup.ranges import Range

__all__ = ["EngineProfile", "Versions", "engine_profile", "release_key", "in_releases"]

_VERSION = re.compile(r"^\d+([.-]\d+)*$")
_META = ("description", "runtime", "versions", "settings")


_SUFFIX = re.compile(r"(?<=\d)(?:\.?(?:post|dev|rc)\d*)?(?:\+[A-Za-z0-9.]+)?$")
"""What follows a release number in a PEP 440 version: .postN, .devN, rcN, +local."""


def release_key(text: str) -> tuple[int, ...]:
    """'0.10.1' -> (0, 10, 1); '2024-10-10' -> (2024, 10, 10); a PEP 440 post, pre or dev release or a local build
    of a release ('0.6.3.post1', '0.11.0rc1', '0.10.1+gptoss') is its release. Raises ValueError on anything else."""
    text = str(text).strip().lstrip("v")
    text = _SUFFIX.sub("", text)
    if not _VERSION.match(text):
        raise ValueError(text)
    return tuple(int(p) for p in re.split(r"[.-]", text))


def in_releases(version: tuple[int, ...], first: tuple[int, ...] | None, last: tuple[int, ...] | None) -> bool:
    """Whether `version` lies in [first, last], each bound a release series (last '0.8' holds 0.8.1)."""
    if first is not None and version[:len(first)] < first:
        return False
    return last is None or version[:len(last)] <= last


class Versions(NamedTuple):
    """The releases an engine's data describes: `first` .. `default` (the current release, taken when none is
    named), and where `default` was read."""

    default: str
    first: str | None = None
    source: str = ""

    def known(self, version: str) -> bool:
        try:
            key = release_key(version)
        except ValueError:
            return False
        return in_releases(key, release_key(self.first) if self.first else None, release_key(self.default))

    def describe(self) -> str:
        return f"{self.first} .. {self.default}" if self.first and self.first != self.default else self.default


class _Entry(NamedTuple):
    value: float | None
    range: Range | None
    source: str
    first: tuple[int, ...] | None = None
    last: tuple[int, ...] | None = None
    releases: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineProfile:
    """The settings of one engine at one release: single values and ranges, each with its source."""

    id: str
    description: str = ""
    version: str = ""
    values: dict[str, float] = field(default_factory=dict)
    ranges: dict[str, Range] = field(default_factory=dict)
    sources: tuple[str, ...] = ()
    runtime: str | None = None
    """A runtime of data/efficiency/overheads.yaml whose per-op cost and fusions this engine runs with."""
    versions: Versions | None = None
    notes: tuple[str, ...] = ()
    """Settings taken from another release than the one asked for (no entry was read for it)."""

    def value(self, key: str, default: float) -> float:
        return self.values.get(key, default)

    def range(self, key: str) -> Range | None:
        return self.ranges.get(key)

    def with_settings(self, settings: dict[str, float] | None) -> EngineProfile:
        """This profile with `settings` (e.g. a run's own gpu_memory_utilization) over its defaults."""
        if not settings:
            return self
        return replace(self, values={**self.values, **{k: float(v) for k, v in settings.items()}})


def _entry(name: str, key: str, data: object, path) -> _Entry:
    if not isinstance(data, dict) or not data.get("source"):
        raise CatalogError(f"{path}: {name}.{key} needs a value or range and a source")
    first = last = None
    releases = data.get("releases")
    if releases is not None:
        if not isinstance(releases, list) or len(releases) != 2 or releases[0] is None:
            raise CatalogError(f"{path}: {name}.{key}.releases must be [FIRST, LAST] (LAST null: through current)")
        try:
            first = release_key(releases[0])
            last = None if releases[1] is None else release_key(releases[1])
        except ValueError as e:
            raise CatalogError(f"{path}: {name}.{key}.releases: {e} is not a release like 0.10 or 2024-10-10") from None
    source = f"{key}: {data['source']} (read {data.get('retrieved', '?')})"
    label = "" if releases is None else f"{releases[0]}-{releases[1]}" if releases[1] else f"{releases[0]} on"
    if "value" in data:
        return _Entry(value=float(data["value"]), range=None, source=source, first=first, last=last, releases=label)
    try:
        return _Entry(value=None, range=Range.parse(data, f"{path}: {name}.{key}"), source=source, first=first,
                      last=last, releases=label)
    except ValueError as e:
        raise CatalogError(str(e)) from None


@lru_cache(maxsize=32)
def _load(name: str) -> tuple[dict[str, Any], dict[str, tuple[_Entry, ...]]]:
    path = builtin_data_dir() / "engines" / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(f"engine profile {name!r}: no data file {path.name} in data/engines")
    data = read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("settings", {}), dict):
        raise CatalogError(f"{path}: expected a mapping with 'settings'")
    unknown = sorted(set(data) - set(_META))
    if unknown:
        raise CatalogError(f"{path}: unknown field {unknown[0]!r}: expected {', '.join(_META)}")
    entries = {}
    for key, raw in (data.get("settings") or {}).items():
        listed = raw if isinstance(raw, list) else [raw]
        parsed = tuple(_entry(name, key, e, path) for e in listed)
        if len(parsed) > 1 and any(e.first is None for e in parsed):
            raise CatalogError(f"{path}: {name}.{key}: every entry of a list names its releases")
        entries[key] = tuple(sorted(parsed, key=lambda e: e.first or ()))
    runtime = data.get("runtime")
    if runtime is not None and not isinstance(runtime, str):
        raise CatalogError(f"{path}: {name}.runtime must name a runtime of overheads.yaml")
    meta = {"description": str(data.get("description", "")), "runtime": runtime, "versions": _versions(data, path)}
    return meta, entries


def _versions(data: dict, path) -> Versions | None:
    v = data.get("versions")
    if v is None:
        return None
    if not isinstance(v, dict) or not v.get("default") or not v.get("source"):
        raise CatalogError(f"{path}: versions needs a default release and the source that names it")
    for bound in ("default", "first"):
        if v.get(bound) is not None:
            try:
                release_key(str(v[bound]))
            except ValueError:
                raise CatalogError(f"{path}: versions.{bound} {v[bound]!r}: expected a release like 0.10") from None
    return Versions(default=str(v["default"]), first=None if v.get("first") is None else str(v["first"]),
                    source=f"{v['source']} (read {v.get('retrieved', '?')})")


def _pick(entries: tuple[_Entry, ...], version: tuple[int, ...] | None) -> tuple[_Entry, bool]:
    """The entry read for `version` (None: the current release, the last entry), and whether it was read for it."""
    if version is None or len(entries) == 1 and entries[0].first is None:
        return entries[-1], True
    for e in entries:
        if in_releases(version, e.first, e.last):
            return e, True
    before = [e for e in entries if e.first is None or version[:len(e.first)] >= e.first]
    return (before[-1] if before else entries[0]), False


def _newest_patch(name: str, version: str, key: tuple[int, ...],
                  entries: dict[str, tuple[_Entry, ...]]) -> tuple[str, tuple[int, ...], str | None]:
    """A release series (`vllm@0.7`) means its newest patch release that sizeup's data names: the latest bound of
    any setting's `releases` inside the series (0.7.1, where a setting changed between 0.7.0 and 0.7.1; the later
    0.7 patches take its settings, no entry being read for them). (version, key, the sentence saying so); an exact
    patch, a build date, or a series no bound falls inside is kept as given (None)."""
    if "-" in version:
        return version, key, None
    inside = [b for options in entries.values() for e in options for b in (e.first, e.last)
              if b is not None and len(b) > len(key) and b[:len(key)] == key]
    if not inside:
        return version, key, None
    newest = max(inside)
    patch = ".".join(str(p) for p in newest)
    return patch, newest, (f"{name}@{version}: a release series, taken as {patch}, the newest {version} patch "
                           f"release sizeup's data names (a setting changed there; later {version} patches take its "
                           f"settings); name the patch, e.g. {name}@{version}.0, for an earlier one")


@lru_cache(maxsize=128)
def engine_profile(name: str, version: str | None = None) -> EngineProfile:
    """The profile of data/engines/NAME.yaml at `version` (None: the file's current release)."""
    meta, entries = _load(name)
    versions = meta["versions"]
    key = None
    if version is not None:
        try:
            key = release_key(version)
        except ValueError:
            raise ConfigError(f"{name}@{version}: expected a release like 0.10 or 2024-10-10") from None
    series = None
    if key is not None:
        version, key, series = _newest_patch(name, version, key, entries)
    values, ranges, sources, taken = {}, {}, [], []
    for setting, options in entries.items():
        entry, exact = _pick(options, key)
        if entry.value is not None:
            values[setting] = entry.value
        else:
            ranges[setting] = entry.range
        sources.append(entry.source)
        if not exact:
            others = [e.releases for e in options if e is not entry]
            taken.append(f"{setting} read for {entry.releases}" + (f" (and {', '.join(others)})" if others else ""))
    notes = (f"{name} {version}: taken from the nearest release read, none read for {version}: "
             f"{'; '.join(taken)}",) if taken else ()
    notes = ((series,) if series else ()) + notes
    return EngineProfile(id=name, description=meta["description"], values=values, ranges=ranges,
                         sources=tuple(sources), runtime=meta["runtime"], versions=versions, notes=notes,
                         version=version or (versions.default if versions else ""))
