"""One registry of model families, keyed by `model_type`, as op formulas are keyed by op name.

A family is a function `read(fields, name) -> ModelArch` in its own file under this package,
registered with `@family("llama", "mistral")`; registering a `model_type` twice raises. The family
files are found and imported on the first lookup, so a new family touches one new file and nothing
else. `parse_config` sends a config to the family of its `model_type`.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sizeup.errors import ConfigError
from sizeup.ingest.arch import ModelArch
from sizeup.ingest.families.decoder import GENERIC, read_decoder
from sizeup.ingest.families.fields import Fields, activation, check_params, largest_dropout

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


def reader_for(model_type: str) -> Reader | None:
    _load_families()
    return _REGISTRY.get(model_type)


def model_types() -> list[str]:
    """Every `model_type` a family reads."""
    _load_families()
    return sorted(_REGISTRY)


_GENERIC_FIELDS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size")


def parse_config(data: dict[str, Any], name: str = "model", where: str = "config.json",
                 sources: dict[str, str] | None = None) -> ModelArch:
    """Build the architecture of a `config.json` mapping; errors name the field, its value and what
    was expected (`sources`: where fields came from when not from a config.json, for the errors).

    An unknown `model_type` that has the standard decoder fields is read as a LLaMA-style decoder,
    and the result says so."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a JSON object")
    c = Fields(data, where, sources)  # a copy: family defaults may be filled in
    model_type = c.model_type
    read = reader_for(model_type)
    if read is not None:
        arch = read(c, name)
    else:
        missing = [k for k in _GENERIC_FIELDS if not c.has(k)]
        if missing or not model_type:
            raise ConfigError(f"{where}: unknown model_type {model_type!r} and no "
                              f"{missing[0] if missing else 'model_type'} field: supported model types are "
                              f"{', '.join(model_types())}")
        gated = "gated" if activation(c.text("hidden_act", default="silu")) == "silu" else "plain"
        arch = read_decoder(c, name, GENERIC, [f"unknown model_type {model_type!r}: read as a LLaMA-style decoder "
                                               f"(RMSNorm, RoPE, {gated} MLP)"])
    check_params(c, arch.params)
    return replace(arch, dropout=max(arch.dropout, largest_dropout(c)))
