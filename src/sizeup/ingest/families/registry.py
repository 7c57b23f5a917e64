"""One registry of model families, keyed by `model_type`, as op formulas are keyed by op name.

A family is a function `read(fields, name) -> ModelArch` in its own file under this package,
registered with `@family("llama", "mistral")`; registering a `model_type` twice raises. A lookup
imports the one file whose `@family(...)` line names the type (found by reading the files' text, so a
command imports one family, not all of them); a type no decorator line names, or a listing of every
type, imports them all. A new family touches one new file and nothing else. `parse_config` sends a
config to the family of its `model_type`.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sizeup.errors import ConfigError
from sizeup.ingest.arch import ModelArch
from sizeup.ingest.families.class_defaults import class_defaults, filled_note
from sizeup.ingest.families.fields import (EXPERTS, HEADS, HIDDEN, INTERMEDIATE, LAYERS, VOCAB, Fields, check_params,
                                           largest_dropout)

__all__ = ["Reader", "family", "reader_for", "model_types", "parse_config"]

Reader = Callable[[Fields, str], ModelArch]
"""A family's reader: the config's fields and the model's name -> its architecture."""

_REGISTRY: dict[str, Reader] = {}
_loaded = False


def family(*model_types: str) -> Callable[[Reader], Reader]:
    """Register `read` as the reader of every `model_type` named; a type registered twice raises."""

    def register(read: Reader) -> Reader:
        for model_type in model_types:
            if model_type in _REGISTRY:
                raise ValueError(f"model_type {model_type!r} is already registered to {_REGISTRY[model_type].__name__}")
            _REGISTRY[model_type] = read
        return read

    return register


def _load_families() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        package = __name__.rpartition(".")[0]
        for module in pkgutil.iter_modules(importlib.import_module(package).__path__):
            importlib.import_module(f"{package}.{module.name}")  # shared modules register nothing


_DECORATOR = re.compile(r"^@family\(([^)]*)\)", re.M)
_QUOTED = re.compile(r"""["']([^"']+)["']""")


def _module_naming(model_type: str) -> str | None:
    """The family file whose decorator line names `model_type`, read as text (no import)."""
    from pathlib import Path

    for path in sorted(Path(__file__).parent.glob("*.py")):
        for args in _DECORATOR.findall(path.read_text(encoding="utf-8")):
            if model_type in _QUOTED.findall(args):
                return path.stem
    return None


def reader_for(model_type: str) -> Reader | None:
    if model_type not in _REGISTRY and not _loaded:
        module = _module_naming(model_type)
        if module is not None:
            importlib.import_module(f"{__name__.rpartition('.')[0]}.{module}")
        if model_type not in _REGISTRY:  # registered some other way, or by no family: look everywhere
            _load_families()
    return _REGISTRY.get(model_type)


def _install_hint() -> str:
    from sizeup.ingest.generic import INSTALL_HINT

    return INSTALL_HINT


def model_types() -> list[str]:
    """Every `model_type` a family reads."""
    _load_families()
    return sorted(_REGISTRY)


def parse_config(data: dict[str, Any], name: str = "model", where: str = "config.json",
                 sources: dict[str, str] | None = None) -> ModelArch:
    """Build the architecture of a `config.json` mapping; errors name the field, its value and what
    was expected (`sources`: where fields came from when not from a config.json, for the errors).

    A `model_type` no family reads goes to the generic reader (transformers builds the model on the meta
    device) when transformers is installed, else is refused in one line that says how to install it; it
    is never guessed from its sizes. `ModelArch.reader` says which path read the model."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a JSON object")
    c = Fields(data, where, sources)  # a copy: family defaults may be filled in
    model_type = c.model_type
    if not model_type:
        raise ConfigError(f"{where}: no model_type field: expected one of {', '.join(model_types())} "
                          f"(or any model_type transformers knows, with {_install_hint()})")
    read = reader_for(model_type)
    defaults = class_defaults(model_type) if read is not None else None
    if defaults is not None:  # a field the config leaves out is read as transformers' class default
        c.defaults = dict(defaults.values)
    if read is not None:
        arch = replace(read(c, name), reader=f"analytic:{read.__module__.rpartition('.')[2]}")
    else:
        arch = _read_generic(c, name)
    check_params(c, arch.params)
    arch = replace(arch, dropout=max(arch.dropout, largest_dropout(c)))
    if defaults is not None and c.filled:
        arch = replace(arch, assumptions=arch.assumptions + (filled_note(defaults, c.filled),))
    return arch


_SIZE_BOUNDS = ((re.compile(r"(^|_)(layers?|n_layer|depth)$"), LAYERS),
                (re.compile(r"^(hidden_size|d_model|n_embd|dim|embed_dim)$"), HIDDEN),
                (re.compile(r"^(intermediate_size|d_ff|n_inner|ffn_dim|\w*intermediate_size)$"), INTERMEDIATE),
                (re.compile(r"vocab_size$"), VOCAB),
                (re.compile(r"(^|_)(heads|n_head)$"), HEADS),
                (re.compile(r"experts$"), EXPERTS))


def _read_generic(c: Fields, name: str) -> ModelArch:
    """The generic reader, after the sizes it would build from are checked against their bounds (at every
    nesting level: a vision or text sub-config too)."""
    from sizeup.ingest import generic

    if not generic.transformers_available():
        raise ConfigError(f"{c.where}: unknown model_type {c.model_type!r}: no sizeup family reads it (they read "
                          f"{', '.join(model_types())}); to read it with transformers: {_install_hint()}")
    stack = [(c.data, c.where)]
    while stack:
        data, where = stack.pop()
        inner = Fields(data, where)
        for key, value in data.items():
            if isinstance(value, dict):
                stack.append((value, f"{where} ({key})"))
            elif isinstance(value, int) and not isinstance(value, bool):
                bound = next((b for pattern, b in _SIZE_BOUNDS if pattern.search(key)), None)
                if bound is not None:
                    inner.int(key, bound=bound, minimum=0)
    return generic.read_generic(c.data, name, c.where)
