"""Forgiving name resolution: "4090", "rtx-4090" and "NVIDIA GeForce RTX 4090" are one device."""

from __future__ import annotations

import difflib
import re

from sizeup.errors import ResolveError

__all__ = ["normalize_name", "resolve_device", "closest"]

_NOISE = re.compile(r"\b(nvidia|geforce|tesla|amd|instinct|intel|google|cloud|apple)\b")


def normalize_name(name: str) -> str:
    """Lower case, vendor words dropped, '80gb' -> '80g', punctuation and spaces removed."""
    text = _NOISE.sub(" ", str(name).lower())
    text = re.sub(r"(\d+)\s*gb\b", r"\1g", text)
    return re.sub(r"[^a-z0-9]+", "", text)


def closest(query: str, names: dict[str, str], n: int = 3) -> list[str]:
    """Up to `n` distinct ids whose names are closest to `query` (keys normalised names -> id)."""
    key = normalize_name(query)
    found: list[str] = []
    for match in difflib.get_close_matches(key, list(names), n=12, cutoff=0.3):
        if names[match] not in found:
            found.append(names[match])
    for k, v in names.items():  # substring hits ("h100" -> h100-pcie-80gb) after fuzzy ones
        if key and key in k and v not in found:
            found.append(v)
    return found[:n]


def _index(catalog) -> dict[str, str]:
    index: dict[str, str] = {}
    for d in catalog.devices.values():
        for name in (d.id, d.name, *d.aliases):
            index.setdefault(normalize_name(name), d.id)
    return index


def resolve_device(catalog, name: str):
    """The device named `name` (id, full name or alias, forgivingly); else ResolveError with the 3 closest."""
    if name in catalog.devices:
        return catalog.devices[name]
    index = _index(catalog)
    key = normalize_name(name)
    if key in index:
        return catalog.devices[index[key]]
    suggestions = closest(name, index)
    hint = f"; closest: {', '.join(suggestions)}" if suggestions else ""
    raise ResolveError(f"unknown device {name!r}{hint} (see 'sizeup hw list')")
