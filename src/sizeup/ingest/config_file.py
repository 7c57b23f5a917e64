"""Reading a `config.json` into a mapping: the one place a config's bytes are read, checked before
they are trusted.

- Only a regular file is read (`sizeup.files`: a FIFO, a device or a folder is refused, never waited on),
  and its size is capped before anything is parsed (`MAX_CONFIG_BYTES`).
- UTF-8, with or without a byte-order mark; any other encoding (UTF-16, UTF-32, Latin-1 with
  non-ASCII bytes) is refused in one line that says which.
- JSON nesting is limited to `MAX_DEPTH` levels (real configs nest 3 or 4 deep).
- NaN and ±Infinity, which Python's json accepts by default, are refused; so are integers too long
  for Python to convert.
"""

from __future__ import annotations

import codecs
import json
import math
import sys
from pathlib import Path
from typing import Any

from sizeup.errors import ConfigError
from sizeup.files import read_regular

__all__ = ["MAX_CONFIG_BYTES", "MAX_DEPTH", "read_config_file", "parse_config_text"]

MAX_CONFIG_BYTES = 4 * 2**20
"""Largest config.json read (the largest in the Hugging Face hub carry label maps of a few hundred KB)."""
MAX_DEPTH = 32
"""Deepest nesting of JSON arrays and objects accepted."""

_OTHER_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"), (codecs.BOM_UTF16_LE, "UTF-16"),
               (codecs.BOM_UTF16_BE, "UTF-16"))


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The JSON object of a config file (a preset file's `config` member)."""
    path = Path(path)
    raw = read_regular(path, what="config file", error=ConfigError, limit=MAX_CONFIG_BYTES)
    data = parse_config_text(raw, str(path))
    if isinstance(data, dict) and "config" in data and "sizeup" in data:
        data = data["config"]
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object, got a JSON {_json_kind(data)}")
    return data


def parse_config_text(raw: bytes, where: str) -> Any:
    """The JSON value of a config's bytes, under the rules of this module."""
    text = _decode(raw, where)
    try:
        data = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{where}: not valid JSON (line {e.lineno} column {e.colno}: {e.msg})") from None
    except RecursionError:
        raise ConfigError(f"{where}: JSON nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as e:  # NaN / Infinity, or an integer of more digits than Python converts
        message = str(e).splitlines()[0]
        if "integer string conversion" in message:
            message = f"an integer of more than {sys.get_int_max_str_digits():,} digits: not a number a config may hold"
        raise ConfigError(f"{where}: {message}") from None
    _check_depth(data, where)
    return data


def _decode(raw: bytes, where: str) -> str:
    for bom, name in _OTHER_BOMS:
        if raw.startswith(bom):
            raise ConfigError(f"{where}: the file is {name}-encoded: expected UTF-8")
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8):]
    if b"\0" in raw[:4096]:
        raise ConfigError(f"{where}: the file holds NUL bytes (UTF-16 or binary?): expected UTF-8 JSON")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{where}: not UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start}; Latin-1 or another "
                          f"encoding?): expected UTF-8") from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a config may hold (expected a finite number)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 parses as infinity
        raise ValueError(f"{text[:20]} overflows to infinity: expected a finite number")
    return value


def _check_depth(data: Any, where: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH (walked without recursion)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > MAX_DEPTH:
                raise ConfigError(f"{where}: JSON nested deeper than {MAX_DEPTH} levels")
            children = value.values() if isinstance(value, dict) else value
            stack.extend((v, depth + 1) for v in children if isinstance(v, (dict, list)))


def _json_kind(value: Any) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")
