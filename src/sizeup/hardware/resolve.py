"""Forgiving name resolution: "4090", "rtx4090", "NVIDIA GeForce RTX 4090" are one device.

Rules, in order (the first that decides wins):
1. the exact device id;
2. the normalised name (lower case, vendor words dropped, punctuation removed) equal to a device's
   id, name or alias;
3. token sets: the query's words (after dropping vendor words, "(R)", "(TM)", "13th Gen",
   "96-Core Processor", "GPU"/"Graphics") must all be words of one of the device's id, name or
   aliases, in any order and spacing ("A100 80GB PCIe" = a100-pcie-80gb; "rtx4090" = "rtx 4090"),
   and that name's other words must all be weak ones: a memory size (16gb), a core count (30-core),
   a series or form-factor word (rtx, radeon, xeon, pcie, sxm5, hbm3, ...). A tier word the query
   lacks (Ti, Super, Max, Pro, XT, Laptop, Ada) never matches: "rtx 3080" is not the 3080 Ti. A
   device one of whose names has exactly the query's words is preferred; else a single device
   matching wins; else, when all matches are variants of one product (`variant_group`), its
   `preferred_variant`; else the name is ambiguous and the matches are listed.
Whenever the result is the preferred variant of a group (or a memory size or power mode of it,
hardware.variants) and the query does not tell its variants apart, the device carries a `resolved_as`
note naming the other variants that match and how to pick one. Memory sizes (16gb), power-mode words
(15w, maxn) are weak words: "orin nano" still resolves to the file's own mode, and says which others exist.
An unknown name lists the three closest; one that names a memory size or power mode a product does not
come in also lists the variants it does.
A name longer than `MAX_NAME_CHARS` is refused before any matching, and the closest-name search reads at
most the first `MAX_MATCH_CHARS` characters of a query: its work is bounded whatever it is sent.
"""

from __future__ import annotations

import re
from functools import lru_cache
from dataclasses import replace

from sizeup.errors import ResolveError
from sizeup.units import GIB, MAX_NAME_CHARS

__all__ = ["normalize_name", "name_tokens", "resolve_device", "closest", "MAX_MATCH_CHARS"]

MAX_MATCH_CHARS = 64
"""Characters of a normalised query the closest-name search compares: difflib's cost grows with the
product of the two lengths, and no device or model name is longer."""

_NOISE = re.compile(r"\b(nvidia|geforce|tesla|amd|instinct|intel|google|cloud|apple)\b")
_VENDOR_NOISE = re.compile(
    r"\((?:r|tm)\)|\b\d+(?:st|nd|rd|th)\s+gen(?:eration)?\b|\b\d+-core\s+processor\b|\bprocessor\b"
    r"|\bwith\s+radeon\s+graphics\b|\bw/\s*radeon\b.*$|\bgraphics\b|\bgpu\b|@.*$"
    r"|\bmacbook(?:\s+(?:pro|air))?(?:\s+1[3-6](?:\s*-?\s*inch\b|\")?)?(?!\d)|\bmac\s+(?:studio|mini|pro)\b|\bimac\b")
"""Also Apple's product names around a chip ('MacBook Pro M3 Max', 'Mac Studio M2 Ultra', 'Mac mini M4 Pro'): the chip
names the device; the machine's own 'Pro' goes with it, the chip's ('M3 Pro') stays."""
_WORDS = {"nvidia", "geforce", "tesla", "amd", "instinct", "intel", "google", "cloud", "apple", "r", "tm"}
_WEAK_WORDS = {"rtx", "gtx", "quadro", "radeon", "rx", "arc", "xeon", "epyc", "ryzen", "core", "platinum", "gold",
               "silver", "pcie", "sxm", "sxm2", "sxm4", "sxm5", "hbm2", "hbm2e", "hbm3", "hbm3e", "gddr6", "gddr6x",
               "gddr7", "lpddr5", "lpddr5x", "desktop", "founders", "edition", "card", "accelerator", "module",
               "maxn"}
_WEAK = re.compile(r"^(\d+g|\d+core|\d+w)$")
_VARIANT_WORD = re.compile(r"^(\d+g|\d+w|maxn)$")
"""Words that pick a memory size or a power mode of a product."""
_NOTE_LIST = 6
"""Variants a note or an error names before it says 'and N more'."""


@lru_cache(maxsize=4096)  # every resolve indexes the whole catalog's names: normalised once each
def normalize_name(name: str) -> str:
    """Lower case, vendor words dropped, '80gb' -> '80g', punctuation and spaces removed. Every pattern here and in
    `name_tokens` starts a match only at the start of a run of digits or letters (a look-behind), so the time is
    linear in the name's length."""
    text = _NOISE.sub(" ", str(name).lower())
    text = re.sub(r"(?<!\d)(\d+)\s*gb\b", r"\1g", text)
    return re.sub(r"[^a-z0-9]+", "", text)


@lru_cache(maxsize=4096)
def name_tokens(name: str) -> frozenset[str]:
    """The words of a device name as a set: vendor words and vendor-tool noise dropped, '80 GB' -> '80g',
    letter runs of two or more split from digits ('rtx4090' -> rtx, 4090; '4060ti' -> 4060, ti)."""
    text = _VENDOR_NOISE.sub(" ", str(name).lower())
    text = re.sub(r"(?<!\d)(\d+)\s*gb\b", r"\1g", text)
    text = re.sub(r"\b(\d+)[\s-]*cores?\b", r"\1core", text)
    text = re.sub(r"(?<![a-z])([a-z]{2,})(\d)", r"\1 \2", text)
    text = re.sub(r"(\d)([a-z]{2,})", r"\1 \2", text)
    text = re.sub(r"(?<!\d)(\d+) (g|core)\b", r"\1\2", text)  # '80g', '30core' split above -> joined again
    return frozenset(t for t in re.split(r"[^a-z0-9]+", text) if t and t not in _WORDS)


def closest(query: str, names: dict[str, str], n: int = 3) -> list[str]:
    """Up to `n` distinct ids whose names are closest to `query` (keys normalised names -> id); only the
    query's first characters count (MAX_MATCH_CHARS after normalising), so a huge query costs no more."""
    import difflib  # only for a name that is not found (~1 ms of start-up otherwise)

    key = normalize_name(str(query)[:4 * MAX_MATCH_CHARS])[:MAX_MATCH_CHARS]
    found: list[str] = []
    for match in difflib.get_close_matches(key, list(names), n=12, cutoff=0.3):
        if names[match] not in found:
            found.append(names[match])
    for k, v in names.items():  # substring hits ("h100" -> h100-pcie-80gb) after fuzzy ones
        if key and key in k and v not in found:
            found.append(v)
    return found[:n]


def _names(d) -> tuple[str, ...]:
    return (d.id, d.name, *d.aliases)


def _index(catalog) -> dict[str, str]:
    index: dict[str, str] = {}
    for d in catalog.devices.values():
        for name in _names(d):
            index.setdefault(normalize_name(name), d.id)
    return index


def _covers(tokens: frozenset[str], query: frozenset[str]) -> bool:
    """`tokens` (one name) has every query word, and its other words are weak ones."""
    return query <= tokens and all(t in _WEAK_WORDS or _WEAK.match(t) for t in tokens - query)


def _by_tokens(catalog, query: frozenset[str]):
    """(devices one of whose names covers the query, devices one of whose names has exactly its words)."""
    matches, exact = [], []
    for d in catalog.devices.values():
        sets = [name_tokens(n) for n in _names(d)]
        if any(_covers(s, query) for s in sets):
            matches.append(d)
            if any(s == query for s in sets):
                exact.append(d)
    return matches, exact


def _group(catalog, device) -> list:
    return sorted((d for d in catalog.devices.values() if d.variant_group == device.variant_group),
                  key=lambda d: d.id)


def _listed(ids: list[str]) -> str:
    extra = len(ids) - _NOTE_LIST
    return ", ".join(ids[:_NOTE_LIST]) + (f" and {extra} more" if extra > 0 else "")


def _is_usual(catalog, device) -> bool:
    """The preferred variant of its group, or a memory size / power mode generated from it."""
    base = catalog.devices.get(device.variant_of) if device.variant_of else None
    return device.preferred_variant or (base is not None and base.preferred_variant)


def _variant_note(catalog, device, name: str, query: frozenset[str]):
    """The device, with a note when `name` picked the usual variant without telling variants apart."""
    if not device.variant_group or not _is_usual(catalog, device):
        return device
    others = [d for d in _group(catalog, device) if d.id != device.id]
    undecided = [d for d in others if any(_covers(name_tokens(n), query) for n in _names(d))]
    if not undecided or name == device.id:
        return device
    example = next((a for a in undecided[0].aliases if name_tokens(a) - query), undecided[0].id)
    note = (f"{name!r} resolved to {device.id} ({device.name}), the usual variant of {device.variant_group}; "
            f"other variants: {_listed([d.id for d in undecided])}; name one to pick it, e.g. {example!r}")
    return replace(device, resolved_as=note)


def _variant_hint(catalog, query: frozenset[str]) -> str:
    """For a name whose memory size or power mode no device has: the variants its product does come in."""
    rest = frozenset(t for t in query if not _VARIANT_WORD.match(t))
    if not rest or rest == query:
        return ""
    matches, exact = _by_tokens(catalog, rest)
    pick = exact if len(exact) == 1 else matches
    groups = sorted({d.variant_group for d in pick if d.variant_group})
    if len(groups) != 1:
        return ""
    members = _group(catalog, next(d for d in pick if d.variant_group == groups[0]))
    labels = [f"{d.id} ({d.power_mode or f'{d.memory_bytes / GIB:g} GB'})" for d in members]
    return f"; {groups[0]} comes as {_listed(labels)}"


def resolve_device(catalog, name: str):
    """The device named `name` (id, full name or alias, forgivingly); else ResolveError with the 3 closest."""
    if name in catalog.devices:
        return catalog.devices[name]
    if len(name) > MAX_NAME_CHARS:
        raise ResolveError(f"device name of {len(name):,} characters ({name[:40]!r}…): expected at most "
                           f"{MAX_NAME_CHARS} (an id, name or alias; see 'sizeup hw list')")
    query = name_tokens(name)
    index = _index(catalog)
    key = normalize_name(name)
    if key in index:
        return _variant_note(catalog, catalog.devices[index[key]], name, query)
    if query:
        matches, exact = _by_tokens(catalog, query)
        pick = exact if len(exact) == 1 else matches
        if len(pick) == 1:
            return _variant_note(catalog, pick[0], name, query)
        groups = {d.variant_group for d in matches}
        if len(matches) > 1 and len(groups) == 1 and None not in groups:
            preferred = [d for d in matches if d.preferred_variant]
            if preferred:
                return _variant_note(catalog, preferred[0], name, query)
        if len(matches) > 1:
            ids = sorted(d.id for d in matches)
            shown = ", ".join(ids[:6]) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")
            raise ResolveError(f"ambiguous device {name!r}: matches {shown}; name one of them")
    suggestions = closest(name, index)
    hint = f"; closest: {', '.join(suggestions)}" if suggestions else ""
    variants = _variant_hint(catalog, query) if query else ""
    raise ResolveError(f"unknown device {name!r}{variants}{hint} (see 'sizeup hw list')")
