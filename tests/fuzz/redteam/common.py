"""What the case generators share: hostile values, hostile names, the sanity check of a JSON answer."""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path
from typing import Any

from tests.fuzz.redteam.runner import MARK, RAW_CONTROL, Result

DEVICE = "rtx-4090"

HOSTILE_NAMES = [
    "\x1b[2J\x1b[Hcleared",
    "ok\rsizeup: error: forged line",
    "bell\x07\x1b]0;title\x07",
    "csi\x9b31mred",
    "rtl\u202eevil\u202c",
    "line\u2028sep",
    "nul\x00byte",
    "=HYPERLINK(\"http://evil.example\",\"cmd\")",
    "+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    MARK,
    "[x](javascript:alert(1)) | *bold* `code`",
    "new\nline",
    "tab\there",
]
"""Names a file, a server or a user could hand sizeup; each carries a terminal escape, a formula start or markup."""


def hostile_name(rng: random.Random) -> str:
    """A name with at least one escape and the raw tag, so every output kind is exercised."""
    control = rng.choice([n for n in HOSTILE_NAMES if RAW_CONTROL.search(n)])
    return f"{control} {MARK} {rng.choice(HOSTILE_NAMES)}"


HOSTILE_NUMBERS: list[Any] = [float("nan"), float("inf"), float("-inf"), 1e308, 1.7e308, 10**30, 2**63, 2**64 + 1,
                              -1, -(2**63), 0, -0.0, 1e-300, 0.5, 1.5, True, False, None, "12", "", [], {}, [1, 2]]
"""Values for a numeric field: NaN, infinities, overflow, signs, zero, fractions, wrong types."""


def json_number_text(value: Any) -> str:
    """A value as JSON text, NaN and infinities as Python's json writes them."""
    return json.dumps(value)


def yaml_text(value: Any) -> str:
    """A value as a YAML flow scalar: .nan, .inf, big integers as digits."""
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


def _numbers(value: Any, path: str = "") -> list[tuple[str, float]]:
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [(path, float(value))]
    if isinstance(value, dict):
        return [n for k, v in value.items() for n in _numbers(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [n for i, v in enumerate(value) for n in _numbers(v, f"{path}[{i}]")]
    return []


_NOT_NEGATIVE = ("bytes", "params", "latency", "tokens_per_s", "flops", "usd", "memory", "layers", "seconds",
                 "_s.", "batch", "count")


def sane_json(result: Result) -> str | None:
    """A handled --json answer: one JSON object, every number finite, sizes, times and prices not negative."""
    if result.code not in (0, 2) or not result.out.strip():
        return None
    if not result.out.lstrip().startswith("{"):
        shown = re.search(r"(?<![\w.])-?(nan|inf|infinity)(?![\w])", result.out, re.IGNORECASE)
        return f"{shown.group()!r} in the answer" if shown else None
    try:
        data = json.loads(result.out)
    except ValueError as e:
        return f"stdout is not one JSON object ({e})"
    for path, number in _numbers(data):
        if not math.isfinite(number):
            return f"{path} = {number} in the JSON answer"
        low = path.lower()
        if number < 0 and any(word in low for word in _NOT_NEGATIVE) and "delta" not in low and "error" not in low \
                and "margin" not in low and "residual" not in low and "slope" not in low and "diff" not in low:
            return f"{path} = {number} (negative) in the JSON answer"
    return None


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data)
    else:
        path.write_bytes(data)
    return path
