"""Load a user's model target: "path/to/file.py:factory" or "package.module:factory"."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sizeup.errors import IngestError
from sizeup.files import user_path
from sizeup.sources import admit_code

__all__ = ["load_factory", "target_source"]


def load_factory(target: str) -> Callable[[], Any]:
    """A zero-argument callable that builds the model named by `target`.

    The attribute may be a function returning an `nn.Module`, an `nn.Module` subclass (called with no
    arguments) or a module instance (returned as is).
    """
    admit_code(target)  # the web UI's policy: no user code
    path_or_module, attr = _split(target)
    module = _import(path_or_module)
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = sorted(n for n in dir(module) if not n.startswith("_"))[:12]
            raise IngestError(f"target {target!r}: {path_or_module!r} has no attribute {attr!r} "
                              f"(it defines: {', '.join(names) or 'nothing'})")
        obj = getattr(obj, part)
    if isinstance(obj, type) or callable(obj):
        return obj
    return lambda: obj


def target_source(target: str) -> Path | None:
    """The Python file that defines `target`'s module, found without running it (the parent packages of a
    dotted module are imported, as Python's own finder does); None when it cannot be found or is not a
    source file (then `load_factory` says why)."""
    try:
        admit_code(target)  # before Python's finder imports a parent package
        path_or_module, _ = _split(target)
        if _is_path(path_or_module):
            path = user_path(path_or_module).resolve()
        else:
            spec = importlib.util.find_spec(path_or_module)
            path = Path(spec.origin).resolve() if spec is not None and spec.origin else None
    except Exception:  # an unimportable parent package, a malformed name: load_factory reports it
        return None
    return path if path is not None and path.suffix == ".py" and path.is_file() else None


def _split(target: str) -> tuple[str, str]:
    path_or_module, sep, attr = target.rpartition(":")
    if not sep or not path_or_module or not attr:
        raise IngestError(f"target {target!r}: expected FILE.py:FACTORY or package.module:FACTORY")
    return path_or_module, attr


def _is_path(spec: str) -> bool:
    return spec.endswith(".py") or "/" in spec or "\\" in spec


def _import(spec: str):
    if _is_path(spec):
        path = user_path(spec)
        if not path.is_file():
            raise IngestError(f"model file {spec!r} does not exist")
        name = f"_sizeup_target_{abs(hash(str(path.resolve())))}"
        loader_spec = importlib.util.spec_from_file_location(name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise IngestError(f"model file {spec!r} cannot be imported as Python")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[name] = module
        sys.path.insert(0, str(path.parent.resolve()))
        try:
            loader_spec.loader.exec_module(module)
        except Exception as e:  # the user's file failed to run
            raise IngestError(f"model file {spec!r} raised {type(e).__name__}: {e}") from e
        finally:
            sys.path.remove(str(path.parent.resolve()))
        return module
    try:
        return importlib.import_module(spec)
    except ImportError as e:
        raise IngestError(f"cannot import module {spec!r}: {e}") from e
