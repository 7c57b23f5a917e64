"""The compiled catalog on disk: JSON keyed by the contents of every file it was built from.

The key hashes, for each data file, its path, size and modification time (and the code that parses
them), so editing a file under `--catalog DIR` rebuilds it. The cache lives in $SIZEUP_CACHE_DIR, else
$XDG_CACHE_HOME/sizeup, else ~/.cache/sizeup; SIZEUP_NO_CACHE=1 turns it off. Files are written
atomically (temporary file + rename); one that cannot be read back, for any reason, is ignored and
rebuilt. Only JSON is read: nothing from the cache folder is ever executed or unpickled.

Layout (JSON lines): the first line is a header (format, key, byte length, and for each device and offer
id the byte span of its line); every other line is one device or offer. A process that asks for one
device (`sizeup estimate --device rtx-4090`) decodes that line only (`LazyRecords`), not the ~300
devices and ~100 offers of the whole catalog (~10 ms at start-up); anything that lists them decodes all.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from sizeup.hardware.schema import DeviceSpec, Interconnect, Offer

__all__ = ["cache_dir", "cache_enabled", "content_key", "read_cached", "write_cached", "read_data_cached",
           "write_data_cached", "LazyRecords", "MISSING"]

FORMAT = 4
"""Bumped whenever the stored layout, or what a data file parses to, changes (3: YAML 1.2 numbers and
booleans, `sizeup.yaml_strict`; 4: the catalog as JSON lines with a header of byte spans)."""


def _sha256_constructor():
    """SHA-256 from CPython's built-in module: `hashlib` loads OpenSSL first (~3 ms of every start-up)."""
    try:
        from _sha2 import sha256  # CPython 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # CPython 3.10, 3.11
        except ImportError:
            from hashlib import sha256
    return sha256


_SHA256: list[Callable[[bytes], Any]] = []
"""The constructor, found once: each failed `import _sha2` searches every sys.path entry again (~0.5 ms, and a
start-up hashes eight or more keys)."""


def _sha256(data: bytes):
    if not _SHA256:
        _SHA256.append(_sha256_constructor())
    return _SHA256[0](data)


def cache_enabled() -> bool:
    return os.environ.get("SIZEUP_NO_CACHE", "").strip().lower() in ("", "0", "false", "no")


def cache_dir() -> Path:
    if os.environ.get("SIZEUP_CACHE_DIR"):
        return Path(os.environ["SIZEUP_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "sizeup"


def content_key(files: list[Path | os.DirEntry], code: list[Path]) -> str:
    """A digest of (path, size, mtime) for every data file and every module that parses them (paths or
    `os.scandir` entries)."""
    h = _sha256(f"sizeup-catalog-{FORMAT}".encode())
    for path in [*files, *code]:
        name = os.fspath(path)
        try:
            st = path.stat()
        except OSError:
            h.update(f"{name}\0missing\n".encode())
            continue
        h.update(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:32]


def _plain(value: Any) -> Any:
    if isinstance(value, Interconnect):
        return {"kind": value.kind, "bytes_per_s": value.bytes_per_s}
    if isinstance(value, tuple):
        return list(value)
    return value


def _to_plain(obj: DeviceSpec | Offer) -> dict[str, Any]:
    return {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}


_TUPLE_FIELDS = {"aliases", "notes", "derived_range"}


_FIELD_NAMES: dict[type, frozenset[str]] = {}


def _from_plain(cls: type, data: dict[str, Any]):
    names = _FIELD_NAMES.get(cls)
    if names is None:  # once per class: dataclasses.fields() per object costs milliseconds over a catalog
        names = _FIELD_NAMES[cls] = frozenset(f.name for f in dataclasses.fields(cls))
    if data.keys() != names:
        raise ValueError("fields differ")
    values = dict(data)
    for key in _TUPLE_FIELDS & names:
        if values[key] is not None:
            values[key] = tuple(values[key])
    if "core_types" in values:
        values["core_types"] = tuple(tuple(t) for t in values["core_types"] or ())
    if values.get("interconnect") is not None:
        values["interconnect"] = Interconnect(**values["interconnect"])
    return cls(**values)


def _path(key: str) -> Path:
    return cache_dir() / f"catalog-{key}.json"


class LazyRecords(Mapping):
    """Devices or offers by id, each decoded from its line of the cache file when first asked for; listing
    them (`values()`, `items()`) decodes them all once. A line that fails to decode (a damaged file) makes
    the whole table come from `rebuild` (the catalog built from its files), so a bad cache is never an error."""

    def __init__(self, raw: bytes, spans: dict[str, list[int]], cls: type,
                 rebuild: Callable[[], dict[str, Any]]) -> None:
        self._raw, self._spans, self._cls, self._rebuild = raw, spans, cls, rebuild
        self._made: dict[str, Any] = {}
        self._all: dict[str, Any] | None = None

    def __getitem__(self, key: str) -> Any:
        if self._all is not None:
            return self._all[key]
        made = self._made.get(key)
        if made is None:
            start, end = self._spans[key]  # KeyError: not in the catalog
            try:
                record = _from_plain(self._cls, json.loads(self._raw[start:end]))
                if record.id != key:
                    raise ValueError("a span points at another record")
            except Exception:  # a damaged cache file: rebuild the table from the data files
                return self._whole()[key]
            made = self._made[key] = record
        return made

    def __contains__(self, key: object) -> bool:
        return key in (self._spans if self._all is None else self._all)

    def __iter__(self) -> Iterator[str]:
        return iter(self._spans if self._all is None else self._all)

    def __len__(self) -> int:
        return len(self._spans if self._all is None else self._all)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def _whole(self) -> dict[str, Any]:
        if self._all is None:
            try:
                self._all = {key: self[key] for key in self._spans}
            except Exception:
                self._all = self._rebuild()
            self._raw = b""
        return self._all

    def values(self):
        return self._whole().values()

    def items(self):
        return self._whole().items()

    def keys(self):
        return self._spans.keys() if self._all is None else self._all.keys()

    def __eq__(self, other: object) -> bool:
        return self._whole() == (other._whole() if isinstance(other, LazyRecords) else other)

    __hash__ = None  # type: ignore[assignment]  # a mapping, as dict

    def __repr__(self) -> str:
        return f"LazyRecords({len(self)} {self._cls.__name__})"


def read_cached(key: str, rebuild: Callable[[], tuple[dict[str, DeviceSpec], dict[str, Offer]]]
                ) -> tuple[Mapping[str, DeviceSpec], Mapping[str, Offer]] | None:
    """The catalog stored under `key` as (devices, offers), each decoded one record at a time, or None (absent,
    disabled, or unreadable: then it is rebuilt). `rebuild` builds the catalog from its files, for a file damaged
    past its header."""
    if not cache_enabled():
        return None
    try:
        with open(_path(key), "rb") as fh:
            raw = fh.read()
        end = raw.index(b"\n")
        head = json.loads(raw[:end])
        if head.get("format") != FORMAT or head.get("key") != key or head.get("bytes") != len(raw):
            return None
        spans = {name: {k: [start + end + 1, stop + end + 1] for k, (start, stop) in head[name].items()}
                 for name in ("devices", "offers")}
    except Exception:  # a corrupt or foreign cache file is never an error: rebuild it
        return None
    built: list[tuple[dict[str, DeviceSpec], dict[str, Offer]]] = []

    def whole(i: int) -> Callable[[], dict[str, Any]]:
        def table() -> dict[str, Any]:
            if not built:
                built.append(rebuild())
            return built[0][i]
        return table

    return (LazyRecords(raw, spans["devices"], DeviceSpec, whole(0)),
            LazyRecords(raw, spans["offers"], Offer, whole(1)))


def _layout(key: str, devices: Mapping[str, DeviceSpec], offers: Mapping[str, Offer]) -> bytes:
    """The cache file: a header line of byte spans (counted from the end of the header line), then one line per
    record."""
    body: list[bytes] = []
    spans: dict[str, dict[str, list[int]]] = {"devices": {}, "offers": {}}
    at = 0
    for name, table in (("devices", devices), ("offers", offers)):
        for k, v in table.items():
            line = json.dumps(_to_plain(v), separators=(",", ":")).encode()
            spans[name][k] = [at, at + len(line)]
            body.append(line + b"\n")
            at += len(line) + 1
    head = {"format": FORMAT, "key": key, "bytes": 0, **spans}
    size = 0
    while True:  # the header states the file's length, its own included
        line = json.dumps({**head, "bytes": size}, separators=(",", ":")).encode() + b"\n"
        if len(line) + at == size:
            return line + b"".join(body)
        size = len(line) + at


def write_cached(key: str, devices: Mapping[str, DeviceSpec], offers: Mapping[str, Offer]) -> None:
    """Store the catalog atomically; a cache folder that cannot be written is silently skipped."""
    if not cache_enabled():
        return
    import tempfile  # only when writing: it costs milliseconds to import

    folder = cache_dir()
    payload = _layout(key, devices, offers)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".catalog-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(payload)
            os.replace(tmp, _path(key))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        for old in folder.glob("catalog-*.json"):  # one catalog per content key is enough
            if old.name != _path(key).name and old.stat().st_mtime < _path(key).stat().st_mtime - 86400:
                old.unlink(missing_ok=True)
    except OSError:
        return


# ---- single data files (efficiency, engines, usable memory, frameworks, architectures) ----------------
# The parsed YAML of one file, as JSON with dates tagged, keyed by the file's path, size and mtime: a hit
# needs neither the yaml module (25 ms to import) nor a parse.

MISSING = object()
"""read_data_cached's answer when there is no usable entry."""


def _data_path(path: Path, st: os.stat_result, resolved: str | None = None) -> Path:
    resolved = str(path.resolve()) if resolved is None else resolved
    key = _sha256(f"sizeup-data-{FORMAT}\0{resolved}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    return cache_dir() / "data" / f"{key.hexdigest()[:32]}.json"


def _tag(value: Any) -> Any:
    import datetime as dt

    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("a mapping key that JSON cannot hold")
        return {k: _tag(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_tag(v) for v in value]
    if isinstance(value, dt.datetime):
        return {"__datetime__": value.isoformat()}
    if isinstance(value, dt.date):
        return {"__date__": value.isoformat()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"{type(value).__name__} is not cached")


def _untag_object(value: dict[str, Any]) -> Any:
    """json's object hook: a tagged date back to a date (every other object as it is), decoded bottom-up as
    `_tag` wrote it."""
    if len(value) == 1 and ("__date__" in value or "__datetime__" in value):
        import datetime as dt

        if "__date__" in value:
            return dt.date.fromisoformat(value["__date__"])
        return dt.datetime.fromisoformat(value["__datetime__"])
    return value


def read_data_cached(path: Path, st: os.stat_result) -> Any:
    """The parsed contents of data file `path` (as yaml's safe loader gives them), or MISSING."""
    if not cache_enabled():
        return MISSING
    try:
        resolved = str(path.resolve())
        with open(_data_path(path, st, resolved), "rb") as fh:
            entry = json.loads(fh.read(), object_hook=_untag_object)
        if entry.get("format") != FORMAT or entry.get("path") != resolved:
            return MISSING
        return entry["data"]
    except Exception:  # absent, corrupt or foreign: parse the file again
        return MISSING


def write_data_cached(path: Path, st: os.stat_result, data: Any) -> None:
    """Store one parsed data file atomically; contents JSON cannot hold, or an unwritable folder, skip it."""
    if not cache_enabled():
        return
    try:
        payload = {"format": FORMAT, "path": str(path.resolve()), "data": _tag(data)}
    except (TypeError, RecursionError):
        return
    import tempfile

    target = _data_path(path, st)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".data-", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(payload, fh, separators=(",", ":"))
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        return
