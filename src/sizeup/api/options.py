"""The options of an API verb: one frozen dataclass per verb, each field typed, with a default and a help line.

A verb is called as `train("llama-3.1-8b", device="h100", method="lora")`: the keywords become a
`TrainOptions` (or are applied to one given positionally). The dataclass is the one place an option is
declared: its type is checked when a caller outside the CLI gives it (a notebook, an MCP client), its
help line documents it, and the MCP tools take their JSON schemas from it (`sizeup.api.schema`).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from sizeup.errors import ConfigError

__all__ = ["Options", "option", "build_options", "option_help"]

T = TypeVar("T", bound="Options")


def option(default: Any, help: str, *, minimum: float | None = None, maximum: float | None = None) -> Any:
    """A field of an options dataclass: its default, the line that documents it, and numeric bounds
    (checked on values given outside the CLI, whose flags check their own)."""
    return dataclasses.field(default=default, metadata={"help": help, "minimum": minimum, "maximum": maximum})


def option_help(cls: type, name: str) -> str:
    return next(f.metadata.get("help", "") for f in dataclasses.fields(cls) if f.name == name)


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    """Base of every verb's options: checks each value against its field's type and bounds."""

    def __post_init__(self) -> None:
        hints = _hints(type(self))
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            checked = _check(value, hints[f.name], f.name)
            if checked is not value:
                object.__setattr__(self, f.name, checked)
            _check_bounds(checked, f)

    def changed(self) -> dict[str, Any]:
        """The options that differ from their defaults."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) != f.default}


def build_options(cls: type[T], options: T | None, changes: Mapping[str, Any], verb: str) -> T:
    """`options` (or the defaults) with `changes` applied; an unknown keyword is refused naming the closest."""
    if options is not None and not isinstance(options, cls):
        raise ConfigError(f"{verb}: options must be a {cls.__name__}, not {type(options).__name__}")
    names = [f.name for f in dataclasses.fields(cls)]
    for key in changes:
        if key not in names:
            import difflib

            near = difflib.get_close_matches(key, names, n=1)
            hint = f" (did you mean {near[0]}?)" if near else f"; expected one of {', '.join(names)}"
            raise ConfigError(f"{verb}: unknown option {key!r}{hint}")
    if options is None:
        return cls(**changes)
    return dataclasses.replace(options, **changes) if changes else options


_PLURAL = {int: "integers", float: "numbers", str: "strings", bool: "true/false values"}


def _describe(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(hint))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in typing.get_args(hint))
    if hint is type(None):
        return "None"
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a list of {_PLURAL.get(args[0], _describe(args[0]))}"
        return f"{len(args)} values ({', '.join(_describe(a) for a in args)})"
    if origin is dict:
        return "a mapping"
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(hint, getattr(
        hint, "__name__", str(hint)))


def _check(value: Any, hint: Any, name: str) -> Any:
    """`value` if it is of type `hint` (a list given for a tuple becomes a tuple), else a ConfigError."""
    try:
        return _coerce(value, hint)
    except (TypeError, ValueError):
        raise ConfigError(f"{name}={value!r}: expected {_describe(hint)}") from None


def _coerce(value: Any, hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(hint):
            try:
                return _coerce(value, arg)
            except (TypeError, ValueError):
                continue
        raise TypeError
    if origin is typing.Literal:
        if value in typing.get_args(hint):
            return value
        raise ValueError
    if hint is type(None):
        if value is None:
            return value
        raise TypeError
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise TypeError
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            items = [_coerce(v, args[0]) for v in value]
        else:
            if len(value) != len(args):
                raise ValueError
            items = [_coerce(v, a) for v, a in zip(value, args)]
        return tuple(items)
    if origin is dict:
        if not isinstance(value, Mapping):
            raise TypeError
        key_type, value_type = typing.get_args(hint)
        return {_coerce(k, key_type): _coerce(v, value_type) for k, v in value.items()}
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise TypeError
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise TypeError
        return value
    if hint is Any:
        return value
    if isinstance(hint, type):
        if isinstance(value, hint):
            return value
        raise TypeError
    raise TypeError


def _check_bounds(value: Any, f: dataclasses.Field) -> None:
    low, high = f.metadata.get("minimum"), f.metadata.get("maximum")
    numbers = value if isinstance(value, tuple) else (value,)
    for v in numbers:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        if low is not None and v < low:
            raise ConfigError(f"{f.name}={v!r}: expected at least {low:,}")
        if high is not None and v > high:
            raise ConfigError(f"{f.name}={v!r}: expected at most {high:,}")
