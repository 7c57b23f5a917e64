"""The compiled methods of sizeup's dataclasses, kept between processes as Python keeps a module's bytecode.

`@dataclass` writes a class's `__init__`, `__repr__`, `__eq__`, `__hash__` and (frozen) `__setattr__` /
`__delattr__` as source text and compiles each text with `exec` (CPython 3.10-3.12: one compile per method,
3.13: one per class). Compiling is nearly all of the ~0.5 ms a class costs, and an estimate defines some sixty
classes: about a third of sizeup's own start-up.

`install()` gives the `dataclasses` module an `exec` of its own that, for a text compiled for a sizeup module,
looks the text up before compiling it. The code objects are kept, keyed by their whole source text, in a marshal
file beside the module's bytecode (`hardware/__pycache__/schema.cpython-311.dataclass-code.bin` beside
`schema.cpython-311.pyc`; under `sys.pycache_prefix` when that is set) and run as `exec` runs the text (file
name `<string>`, no inherited `__future__` flags): every method is the one `dataclasses` would have compiled.
A text seen for the first time is compiled as before, and the files that gained one are rewritten when the
process exits. The files are trusted as .pyc files are: written where Python writes sizeup's bytecode, and not
at all when bytecode writing is off (`PYTHONDONTWRITEBYTECODE`, `-B`) or the folder is read-only (then each
process compiles, as without them). A file of another Python version or optimisation level, or one that cannot
be read, is ignored. Classes of other packages are compiled by the built-in `exec`, untouched. SIZEUP_NO_CACHE=1
leaves `dataclasses` as it is.
"""

from __future__ import annotations

import builtins
import dataclasses
import marshal
import os
import sys
from types import CodeType

__all__ = ["install", "uninstall", "cache_path"]

_STAMP = f"sizeup-dataclass-code-1 {sys.version} optimize={sys.flags.optimize}"
"""The first entry of each file: code objects are only valid for the Python that compiled them."""
_MAX_ENTRIES = 400
"""Past this many kept texts in one module's file (old edits of its classes) it keeps only those this process used."""

_tables: dict[str, dict[str, CodeType]] = {}
"""Per file: method text -> its code."""
_used: dict[str, set[str]] = {}
_new: set[str] = set()
"""The files with a text compiled in this process."""
_state = {"installed": False}


def cache_path(cached: str) -> str:
    """The kept code of the module whose bytecode is `cached` (its `__cached__`): beside it, named as it is (so
    `sys.pycache_prefix` moves both, and -O keeps a file of its own as it keeps an `.opt-1.pyc`)."""
    return (cached[:-4] if cached.endswith(".pyc") else cached) + ".dataclass-code.bin"


def _load(path: str) -> dict[str, CodeType]:
    table: dict[str, CodeType] = {}
    try:
        with open(path, "rb") as fh:
            stamp, codes = marshal.loads(fh.read())  # marshal.load(fh) reads in small pieces: ~4x slower
    except Exception:  # absent, damaged or foreign: compile as usual
        return table
    if stamp == _STAMP and isinstance(codes, dict):
        table.update((t, c) for t, c in codes.items() if isinstance(t, str) and isinstance(c, CodeType))
    return table


def _save() -> None:
    """At exit: write each file with a text compiled in this process, with those already kept (atomically;
    never an error)."""
    if sys.dont_write_bytecode:
        return
    for path in sorted(_new):
        table = _tables[path]
        if len(table) > _MAX_ENTRIES:
            table = {t: c for t, c in table.items() if t in _used[path]}
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(tmp, "xb") as fh:
                fh.write(marshal.dumps((_STAMP, table)))
            os.replace(tmp, path)
        except Exception:  # a read-only install, a full disk: the next process compiles as this one did
            try:
                os.unlink(tmp)
            except OSError:
                pass
    _new.clear()


def _exec(source, globals=None, locals=None, /, **kwargs):
    """`exec` as the `dataclasses` module calls it; a sizeup module's method text runs from its kept code."""
    if globals is None:  # exec's own default: the caller's namespace (dataclasses always passes one)
        frame = sys._getframe(1)
        globals, locals = frame.f_globals, frame.f_locals if locals is None else locals
    cached = globals.get("__cached__") if isinstance(globals, dict) else None
    if (kwargs or not isinstance(source, str) or not isinstance(cached, str)
            or not str(globals.get("__name__", "")).startswith("sizeup.")):
        return builtins.exec(source, globals, locals, **kwargs)
    path = cache_path(cached)
    table = _tables.get(path)
    if table is None:
        table = _tables[path] = _load(path)
        _used[path] = set()
    code = table.get(source)
    if code is None:
        code = table[source] = compile(source, "<string>", "exec", dont_inherit=True)
        _new.add(path)
    _used[path].add(source)
    return builtins.exec(code, globals, locals)


def install() -> None:
    """Route `dataclasses`' compiles through the kept code (once per process; left alone when something else
    already gave `dataclasses` an `exec` of its own, and under SIZEUP_NO_CACHE=1, which turns off every cache)."""
    if _state["installed"] or "exec" in vars(dataclasses) or \
            os.environ.get("SIZEUP_NO_CACHE", "").strip().lower() not in ("", "0", "false", "no"):
        return
    import atexit

    dataclasses.exec = _exec  # type: ignore[attr-defined]  # a module global shadows the built-in there
    atexit.register(_save)
    _state["installed"] = True


def uninstall() -> None:
    """Give `dataclasses` back the built-in `exec` (tests)."""
    if _state["installed"] and vars(dataclasses).get("exec") is _exec:
        del dataclasses.exec  # type: ignore[attr-defined]
        import atexit

        atexit.unregister(_save)
    _state["installed"] = False
