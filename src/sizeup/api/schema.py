"""JSON Schema of a verb's options, taken from its options dataclass: each field's type, default, bounds and help
line. The MCP tools publish these; a field whose type has no JSON form (a `DeviceSpec` object) keeps its JSON
alternatives only (a device name)."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["json_type", "options_schema"]

_SCALARS = {int: {"type": "integer"}, float: {"type": "number"}, str: {"type": "string"}, bool: {"type": "boolean"},
            type(None): {"type": "null"}, Path: {"type": "string"}}


def json_type(hint: Any) -> dict[str, Any] | None:
    """The JSON Schema of a type hint, or None when it has no JSON form."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        parts = [s for s in (json_type(a) for a in typing.get_args(hint)) if s is not None]
        unique = [p for i, p in enumerate(parts) if p not in parts[:i]]
        return None if not unique else unique[0] if len(unique) == 1 else {"anyOf": unique}
    if origin is typing.Literal:
        values = list(typing.get_args(hint))
        return {"type": "string", "enum": values} if all(isinstance(v, str) for v in values) else {"enum": values}
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            item = json_type(args[0])
            return None if item is None else {"type": "array", "items": item}
        items = [json_type(a) for a in args]
        if any(i is None for i in items):
            return None
        return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}
    if origin is dict:
        value = json_type(typing.get_args(hint)[1])
        return None if value is None else {"type": "object", "additionalProperties": value}
    return dict(_SCALARS[hint]) if hint in _SCALARS else None


def _bounded(schema: dict[str, Any], low: float | None, high: float | None) -> dict[str, Any]:
    """`schema` with the field's bounds on its numbers (inside arrays and alternatives too)."""
    if "anyOf" in schema:
        return {**schema, "anyOf": [_bounded(s, low, high) for s in schema["anyOf"]]}
    if schema.get("type") == "array" and "items" in schema:
        return {**schema, "items": _bounded(schema["items"], low, high)}
    if schema.get("type") == "array" and "prefixItems" in schema:
        return {**schema, "prefixItems": [_bounded(s, low, high) for s in schema["prefixItems"]]}
    if schema.get("type") == "object" and isinstance(schema.get("additionalProperties"), dict):
        return {**schema, "additionalProperties": _bounded(schema["additionalProperties"], low, high)}
    if schema.get("type") in ("integer", "number"):
        schema = dict(schema)
        if low is not None:
            schema["minimum"] = low
        if high is not None:
            schema["maximum"] = high
    return schema


def options_schema(cls: type, *, leave_out: Iterable[str] = (), required: Iterable[str] = (),
                   first: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """An object schema of the options dataclass `cls`: one property per field (less `leave_out`), after the
    properties of `first` (e.g. the verb's positional model), with `required` names required."""
    hints = typing.get_type_hints(cls)
    skip = set(leave_out)
    properties: dict[str, Any] = dict(first or {})
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        schema = json_type(hints[f.name])
        if schema is None:
            continue
        if f.name in required and "anyOf" in schema:  # a required option is never null
            kept = [s for s in schema["anyOf"] if s != {"type": "null"}]
            schema = kept[0] if len(kept) == 1 else {"anyOf": kept}
        schema = _bounded(schema, f.metadata.get("minimum"), f.metadata.get("maximum"))
        if f.metadata.get("help"):
            schema["description"] = f.metadata["help"]
        default = f.default
        if default is not dataclasses.MISSING and default is not None and f.name not in required:
            schema["default"] = list(default) if isinstance(default, tuple) else default
        properties[f.name] = schema
    return {"type": "object", "properties": properties, "required": [n for n in required if n in properties],
            "additionalProperties": False}
