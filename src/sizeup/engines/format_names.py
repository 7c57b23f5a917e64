"""An engine's own spellings of a quantization (`ExecutionModel.FORMAT_NAMES`: mlx's '4bit', transformers' '8bit')
read as the format ids formats.py knows, with the note that says so."""
from __future__ import annotations

import re

from sizeup.engines.base import engine_class


def engine_format_name(engine_text: str | None, quant: str) -> tuple[str, str]:
    """`quant` as the format id an engine's own spelling names (`FORMAT_NAMES`) and the note that says so; a name
    the engine does not spell is returned as given (formats.py reads it, or refuses it in one line)."""
    if not engine_text:
        return quant, ""
    cls = engine_class(str(engine_text).partition("@")[0])
    key = re.sub(r"[\s_.-]+", "", str(quant).strip().lower())
    if key.startswith(cls.NAME) and key != cls.NAME:
        key = key[len(cls.NAME):]
    if key not in cls.FORMAT_NAMES:
        return quant, ""
    fmt, why = cls.FORMAT_NAMES[key]
    return fmt, f"--quant {quant}: {fmt} under {cls.NAME} ({why})"
