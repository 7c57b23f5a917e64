"""The compiled catalog on disk: plain JSON keyed by the contents of every file it was built from.

The key hashes, for each data file, its path, size and modification time (and the code that parses
them), so editing a file under `--catalog DIR` rebuilds it. The cache lives in $SIZEUP_CACHE_DIR, else
$XDG_CACHE_HOME/sizeup, else ~/.cache/sizeup; SIZEUP_NO_CACHE=1 turns it off. Files are written
atomically (temporary file + rename); one that cannot be read back, for any reason, is ignored and
rebuilt. Only JSON is read: nothing from the cache folder is ever executed or unpickled.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from sizeup.hardware.schema import DeviceSpec, Interconnect, Offer

__all__ = ["cache_dir", "cache_enabled", "content_key", "read_cached", "write_cached", "read_data_cached",
           "write_data_cached", "MISSING"]

FORMAT = 3
"""Bumped whenever the stored layout, or what a data file parses to, changes (3: YAML 1.2 numbers and
booleans, `sizeup.yaml_strict`)."""


def _sha256(data: bytes):
    """SHA-256 from CPython's built-in module: `hashlib` loads OpenSSL first (~3 ms of every start-up)."""
    try:
        from _sha2 import sha256  # CPython 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # CPython 3.10, 3.11
        except ImportError:
            from hashlib import sha256
    return sha256(data)


def cache_enabled() -> bool:
    return os.environ.get("SIZEUP_NO_CACHE", "").strip().lower() in ("", "0", "false", "no")


def cache_dir() -> Path:
    if os.environ.get("SIZEUP_CACHE_DIR"):
        return Path(os.environ["SIZEUP_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "sizeup"


def content_key(files: list[Path], code: list[Path]) -> str:
    """A digest of (path, size, mtime) for every data file and every module that parses them."""
    h = _sha256(f"sizeup-catalog-{FORMAT}".encode())
    for path in [*files, *code]:
        try:
            st = path.stat()
        except OSError:
            h.update(f"{path}\0missing\n".encode())
            continue
        h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
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


def read_cached(key: str) -> tuple[dict[str, DeviceSpec], dict[str, Offer]] | None:
    """The catalog stored under `key`, or None (absent, disabled, or unreadable: then it is rebuilt)."""
    if not cache_enabled():
        return None
    try:
        with open(_path(key), encoding="utf-8") as fh:
            data = json.load(fh)
        if data.get("format") != FORMAT or data.get("key") != key:
            return None
        devices = {k: _from_plain(DeviceSpec, v) for k, v in data["devices"].items()}
        offers = {k: _from_plain(Offer, v) for k, v in data["offers"].items()}
        return devices, offers
    except Exception:  # a corrupt or foreign cache file is never an error: rebuild it
        return None


def write_cached(key: str, devices: dict[str, DeviceSpec], offers: dict[str, Offer]) -> None:
    """Store the catalog atomically; a cache folder that cannot be written is silently skipped."""
    if not cache_enabled():
        return
    import tempfile  # only when writing: it costs milliseconds to import

    folder = cache_dir()
    payload = {"format": FORMAT, "key": key, "devices": {k: _to_plain(v) for k, v in devices.items()},
               "offers": {k: _to_plain(v) for k, v in offers.items()}}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".catalog-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(payload, fh, separators=(",", ":"))
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


def _data_path(path: Path, st: os.stat_result) -> Path:
    key = _sha256(f"sizeup-data-{FORMAT}\0{path.resolve()}\0{st.st_size}\0{st.st_mtime_ns}".encode())
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


def _untag(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) == 1 and ("__date__" in value or "__datetime__" in value):
            import datetime as dt

            if "__date__" in value:
                return dt.date.fromisoformat(value["__date__"])
            return dt.datetime.fromisoformat(value["__datetime__"])
        return {k: _untag(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_untag(v) for v in value]
    return value


def read_data_cached(path: Path, st: os.stat_result) -> Any:
    """The parsed contents of data file `path` (as yaml's safe loader gives them), or MISSING."""
    if not cache_enabled():
        return MISSING
    try:
        with open(_data_path(path, st), encoding="utf-8") as fh:
            entry = json.load(fh)
        if entry.get("format") != FORMAT or entry.get("path") != str(path.resolve()):
            return MISSING
        return _untag(entry["data"])
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
