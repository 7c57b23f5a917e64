"""The compiled methods of sizeup's dataclasses, kept between processes as Python keeps a module's bytecode.

`@dataclass` writes a class's `__init__`, `__repr__`, `__eq__`, `__hash__` and (frozen) `__setattr__` /
`__delattr__` as source text and compiles each text with `exec` (CPython 3.10-3.12: one compile per method,
3.13: one per class). Compiling is nearly all of the ~0.5 ms a class costs, and an estimate defines some sixty
classes: about a third of sizeup's own start-up.

`install()` gives the `dataclasses` module an `exec` of its own that, for a text compiled for a sizeup module,
looks the text up before compiling it: the code objects are kept, keyed by their whole source text, in one
marshal file beside the package's bytecode (`sizeup/__pycache__/dataclass-code.TAG.bin`, or under
`sys.pycache_prefix`), and run exactly as `exec` runs the text (same file name `<string>`, no inherited
`__future__` flags), so every method is the one `dataclasses` would have compiled. A text seen for the first time
is compiled as before, and the file is rewritten when the process exits. The file is trusted as a .pyc is:
it is written where Python writes sizeup's bytecode, and not at all when bytecode writing is off
(`PYTHONDONTWRITEBYTECODE`, `-B`) or the folder is read-only; then each process compiles, as without it. A file of
another Python version or optimisation level, or one that cannot be read, is ignored. Classes of other packages
are compiled by the built-in `exec`, untouched.
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
"""The first entry of the file: code objects are only valid for the Python that compiled them."""
_MAX_ENTRIES = 8000
"""Past this many kept texts (old edits of classes) the file keeps only those this process used."""

_codes: dict[str, CodeType] = {}
_used: set[str] = set()
_state = {"installed": False, "new": False, "loaded": False}


def cache_path() -> str | None:
    """Where the compiled methods are kept: the package's bytecode folder (None when Python names none)."""
    cached = globals().get("__cached__")
    if not cached:
        return None
    return os.path.join(os.path.dirname(cached), f"dataclass-code.{sys.implementation.cache_tag}.bin")


def _load() -> None:
    _state["loaded"] = True
    path = cache_path()
    if path is None:
        return
    try:
        with open(path, "rb") as fh:
            stamp, codes = marshal.loads(fh.read())  # marshal.load(fh) reads in small pieces: ~4x slower
    except Exception:  # absent, damaged or foreign: compile as usual
        return
    if stamp != _STAMP or not isinstance(codes, dict):
        return
    for text, code in codes.items():
        if isinstance(text, str) and isinstance(code, CodeType):
            _codes.setdefault(text, code)


def _save() -> None:
    """At exit: write the texts compiled in this process, with those already kept (atomically; never an error)."""
    path = cache_path()
    if not _state["new"] or path is None or sys.dont_write_bytecode:
        return
    codes = _codes if len(_codes) <= _MAX_ENTRIES else {t: c for t, c in _codes.items() if t in _used}
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "xb") as fh:
            marshal.dump((_STAMP, codes), fh)
        os.replace(tmp, path)
    except Exception:  # a read-only install, a full disk: the next process compiles as this one did
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _exec(source, globals=None, locals=None, /, **kwargs):
    """`exec` as the `dataclasses` module calls it; a sizeup module's method text runs from its kept code."""
    if globals is None:  # exec's own default: the caller's namespace (dataclasses always passes one)
        frame = sys._getframe(1)
        globals, locals = frame.f_globals, frame.f_locals if locals is None else locals
    if (kwargs or not isinstance(source, str) or not isinstance(globals, dict)
            or not str(globals.get("__name__", "")).startswith("sizeup.")):
        return builtins.exec(source, globals, locals, **kwargs)
    if not _state["loaded"]:
        _load()
    code = _codes.get(source)
    if code is None:
        code = _codes[source] = compile(source, "<string>", "exec", dont_inherit=True)
        _state["new"] = True
    _used.add(source)
    return builtins.exec(code, globals, locals)


def install() -> None:
    """Route `dataclasses`' compiles through the kept code (once per process; left alone when something else
    already gave `dataclasses` an `exec` of its own)."""
    if _state["installed"] or "exec" in vars(dataclasses):
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
