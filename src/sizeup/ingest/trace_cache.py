"""Traced ledgers of torch modules, kept on disk so the same model on the same inputs is traced once.

An entry is named by a key over everything a trace depends on: the file that defines the target's module
(its contents), the factory's name, the inputs (shapes, dtypes, names), the float dtype, the mode
(inference, backward, train) and optimizer, the torch and Python versions, and sizeup's version with a
digest of its tracer's own code (ledger, units, ops, torch_trace). An entry also lists what the traced
model imported besides: local source files with their contents' digest, installed packages with their
version; an entry whose dependencies changed is traced again.

Entries are JSON (`Ledger.to_dict`), never pickle, written atomically (a temporary file renamed over the
entry); one that cannot be read, parsed or rebuilt is ignored and traced again. The folder:
$SIZEUP_CACHE_DIR/traces, else $XDG_CACHE_HOME/sizeup/traces, else ~/.cache/sizeup/traces;
SIZEUP_NO_CACHE=1 turns the cache off.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sizeup.files import user_path
from sizeup.ingest.target import target_source
from sizeup.sources import admit_code
from sizeup.ingest.trace_inputs import InputSpec, TraceMode
from sizeup.ledger import Ledger

__all__ = ["cache_dir", "trace_key", "traced_ledger"]

FORMAT = 1
"""Version of the entry layout; a change makes every older entry a miss."""

_TRACER_SOURCES = ("ledger.py", "units.py", "ingest/torch_trace.py", "ingest/trace_inputs.py", "ops")
"""sizeup's own files that decide what a trace records (relative to the package)."""


def cache_dir() -> Path | None:
    """The folder of trace entries; None when SIZEUP_NO_CACHE is set (to anything but '' or '0')."""
    if os.environ.get("SIZEUP_NO_CACHE", "") not in ("", "0"):
        return None
    if os.environ.get("SIZEUP_CACHE_DIR"):
        root = user_path(os.environ["SIZEUP_CACHE_DIR"])
    else:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "sizeup"
    return root / "traces"


def trace_key(target: str, inputs: Sequence[InputSpec], *, dtype: str = "fp32",
              mode: TraceMode = TraceMode.INFERENCE, optimizer: str = "adamw", name: str | None = None) -> str | None:
    """The digest naming the trace of `target` on `inputs`; None when the target's source file cannot be
    found without running it (such a target is traced every time)."""
    source = target_source(target)
    if source is None:
        return None
    torch_version = _version("torch")
    if torch_version is None:
        return None
    document = {
        "format": FORMAT,
        "source": {"path": str(source), "sha256": _file_digest(source)},
        "factory": target.rpartition(":")[2],
        "inputs": [{"shape": list(i.shape), "dtype": i.dtype, "name": i.name} for i in inputs],
        "dtype": dtype, "mode": TraceMode(mode).value, "optimizer": optimizer, "name": name,
        "torch": torch_version, "python": list(sys.version_info[:2]),
        "sizeup": _sizeup_version(), "tracer": _tracer_digest(),
    }
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()


def traced_ledger(target: str, inputs: Sequence[InputSpec], *, dtype: str = "fp32",
                  mode: TraceMode = TraceMode.INFERENCE, optimizer: str = "adamw", name: str | None = None) -> Ledger:
    """The ledger of `target` ("file.py:factory" or "package.module:factory") traced on `inputs`: from the
    cache when an entry for the same source and inputs exists and its dependencies are unchanged, else
    traced (torch loads only then) and stored."""
    admit_code(target)  # the web UI's policy: refused before torch or the target's packages load
    folder = cache_dir()
    key = None if folder is None else trace_key(target, inputs, dtype=dtype, mode=mode, optimizer=optimizer,
                                                name=name)
    entry = None if key is None else folder / f"{key}.json"
    if entry is not None:
        ledger = _load(entry, key)
        if ledger is not None:
            return ledger
    ledger, dependencies = _trace(target, inputs, dtype=dtype, mode=mode, optimizer=optimizer, name=name)
    if entry is not None and dependencies is not None:
        _store(entry, {"format": FORMAT, "key": key, "dependencies": dependencies, "ledger": ledger.to_dict()})
    return ledger


# ---- tracing, with what the model imported ------------------------------------------------------

def _trace(target: str, inputs: Sequence[InputSpec],
           **options: Any) -> tuple[Ledger, dict[str, dict[str, str]] | None]:
    """The ledger, and what the model imported while it was built and run (None: not known, do not cache)."""
    from sizeup.ingest.target import load_factory
    from sizeup.ingest.torch_trace import trace_module

    before = set(sys.modules)
    ledger = trace_module(load_factory(target), inputs, **options)
    try:
        return ledger, _dependencies([sys.modules[m] for m in set(sys.modules) - before], skip=target_source(target))
    except (OSError, ValueError, TypeError, KeyError):  # an odd module: trace it again next time
        return ledger, None


def _dependencies(modules: list[Any], skip: Path | None) -> dict[str, dict[str, str]]:
    """Local source files (digest of their contents) and installed packages (version) among `modules`."""
    installed = {Path(p).resolve() for k, p in sysconfig.get_paths().items()
                 if k in ("stdlib", "platstdlib", "purelib", "platlib")}
    files: dict[str, str] = {}
    packages: dict[str, str] = {}
    for module in modules:
        path = getattr(module, "__file__", None)
        if not path:
            continue
        path = Path(path).resolve()
        if any(path.is_relative_to(root) for root in installed):
            top = module.__name__.partition(".")[0]
            version = _version(top)
            if version is not None:
                packages[top] = version
        elif path != skip and path.suffix == ".py" and path.is_file():
            files[str(path)] = _file_digest(path)
    return {"files": dict(sorted(files.items())), "packages": dict(sorted(packages.items()))}


def _unchanged(dependencies: dict[str, dict[str, str]]) -> bool:
    for path, digest in dependencies["files"].items():
        if not Path(path).is_file() or _file_digest(Path(path)) != digest:
            return False
    return all(_version(name) == version for name, version in dependencies["packages"].items())


# ---- entries -----------------------------------------------------------------------------------

def _load(entry: Path, key: str) -> Ledger | None:
    """The cached ledger, or None when the entry is missing, unreadable, from another layout or key,
    malformed, or its dependencies changed."""
    try:
        data = json.loads(entry.read_text(encoding="utf-8"))
        if data["format"] != FORMAT or data["key"] != key or not _unchanged(data["dependencies"]):
            return None
        return Ledger.from_dict(data["ledger"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _store(entry: Path, data: dict[str, Any]) -> None:
    """Write `data` to `entry` atomically; a folder that cannot be written only costs the next run a trace."""
    tmp = None
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=entry.parent, prefix=entry.stem,
                                         suffix=".tmp", delete=False) as f:
            tmp = Path(f.name)
            json.dump(data, f, separators=(",", ":"))
        os.replace(tmp, entry)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)


# ---- digests -----------------------------------------------------------------------------------

def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tracer_digest() -> str:
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for rel in _TRACER_SOURCES:
        path = package / rel
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            digest.update(str(file.relative_to(package)).encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()


def _sizeup_version() -> str:
    from sizeup import __version__

    return __version__


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
