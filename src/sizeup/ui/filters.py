"""How the pages write numbers: every figure through one of these Jinja filters, each for one kind of value
(bytes, seconds, rates, dollars, counts, shares, times of day), so no page shows a 16-digit float, `None` or a
Python dict. A missing value (None, NaN) is an en dash; the units come from `sizeup.units`."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["install_filters", "FILTERS"]

DASH = "–"


def _missing(v: Any) -> bool:
    return v is None or v == "" or (isinstance(v, float) and not math.isfinite(v))


def _bytes(v: Any) -> str:
    from sizeup.units import format_bytes

    return DASH if _missing(v) else format_bytes(float(v))


def _secs(v: Any) -> str:
    from sizeup.units import format_seconds

    if _missing(v):
        return DASH
    return "0 s" if float(v) == 0 else ("−" if float(v) < 0 else "") + format_seconds(abs(float(v)))


def _num(v: Any, digits: int = 1) -> str:
    """1234.567 -> '1,234.6'; a value under 10 keeps three significant digits."""
    if _missing(v):
        return DASH
    v = float(v)
    if v != 0 and abs(v) < 10 and digits >= 1:
        return f"{v:,.3g}"
    return f"{v:,.{digits}f}"


def _count(v: Any) -> str:
    """8030261248 -> '8.03 B', 131072 -> '131,072' (whole counts: parameters, tokens, FLOPs per step)."""
    if _missing(v):
        return DASH
    v = float(v)
    for scale, word in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if abs(v) >= scale * 0.9995:  # 999.9 M is shown as 1 B, never as "1e+03 M"
            return f"{v / scale:,.3g} {word}"
    return f"{v:,.0f}"


def _flops(v: Any) -> str:
    from sizeup.units import format_si

    return DASH if _missing(v) else format_si(float(v), "FLOP")


def _rate(v: Any, unit: str = "FLOP/s") -> str:
    from sizeup.units import format_si

    return DASH if _missing(v) else format_si(float(v), unit)


def _usd(v: Any) -> str:
    if _missing(v):
        return DASH
    v = float(v)
    return f"${v:,.0f}" if abs(v) >= 1000 else f"${v:,.2f}" if abs(v) >= 0.01 else f"${v:.2g}"


def _pct(v: Any, signed: bool = False) -> str:
    if _missing(v):
        return DASH
    return f"{float(v) * 100:+.0f}%" if signed else f"{float(v) * 100:.0f}%"


def _when(v: Any) -> str:
    """'2026-12-05T02:24:42.8+00:00' -> '2026-12-05 02:24 UTC'."""
    if _missing(v):
        return DASH
    text = str(v)
    return f"{text[:10]} {text[11:16]} UTC" if len(text) >= 16 and text[10] == "T" else text


def _label(key: Any) -> str:
    """A key as a header: 'tokens_per_s' -> 'tokens per s', 'kv_cache_bytes' -> 'KV cache'."""
    from sizeup.units import spoken_metric

    words = str(key).removesuffix("_bytes").removesuffix("_s").replace("_", " ")
    return spoken_metric(str(key)) if str(key).startswith(("ttft", "tpot", "e2e")) else \
        words.replace("kv ", "KV ").replace("mfu", "MFU").replace("gpu", "GPU")


def _yesno(v: Any) -> str:
    return DASH if v is None else ("yes" if v else "no")


def _text(v: Any) -> str:
    """A value of unknown kind as a reader wants it: lists joined, mappings as k: v, None as a dash."""
    if _missing(v):
        return DASH
    if isinstance(v, bool):
        return _yesno(v)
    if isinstance(v, float):
        return f"{v:,.0f}" if v.is_integer() and abs(v) < 1e15 else _num(v, 2)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, (list, tuple)):
        return ", ".join(_text(x) for x in v) or DASH
    if isinstance(v, dict):
        return "; ".join(f"{_label(k)}: {_text(x)}" for k, x in v.items()) or DASH
    return str(v)


def _target(v: Any) -> str:
    """A run's target as a heading: an imported file's folders left out ('guidellm:/x/y/run.json' ->
    'guidellm: run.json'); the whole path stays in the run's configuration."""
    if _missing(v):
        return DASH
    text = str(v)
    prefix, sep, rest = text.partition(":")
    path = rest if sep and "/" in rest and "/" not in prefix else text
    if "/" not in path:
        return text
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return f"{prefix}: {name}" if path is rest else name


def _log2(v: Any) -> int:
    """The slider position of a power-of-two slider: round(log2(v)), at least 0."""
    try:
        return max(round(math.log2(max(float(v), 1.0))), 0)
    except (TypeError, ValueError):
        return 0


FILTERS = {"bytes": _bytes, "secs": _secs, "num": _num, "count": _count, "flops": _flops, "rate": _rate,
           "usd": _usd, "pct": _pct, "when": _when, "label": _label, "yesno": _yesno, "text": _text,
           "log2": _log2, "target": _target}


def install_filters(env) -> None:
    env.filters.update(FILTERS)
