"""The only place units convert. Code holds SI base units (bytes, seconds, FLOP/s, bytes/s)."""

from __future__ import annotations

import math
import re

from sizeup.errors import ConfigError

KIB = 2**10
MIB = 2**20
GIB = 2**30
TIB = 2**40

KILO = 10**3
MEGA = 10**6
GIGA = 10**9
TERA = 10**12
PETA = 10**15

BITS_PER_BYTE = 8

# Storage width of each dtype sizeup knows, in bits. Sub-byte types pack: numel * bits / 8 bytes.
DTYPE_BITS: dict[str, int] = {
    "fp64": 64,
    "fp32": 32,
    "tf32": 32,
    "bf16": 16,
    "fp16": 16,
    "fp8": 8,
    "fp4": 4,
    "int64": 64,
    "int32": 32,
    "int16": 16,
    "int8": 8,
    "uint8": 8,
    "int4": 4,
    "bool": 8,
    "complex64": 64,
    "complex128": 128,
}

_DTYPE_ALIASES: dict[str, str] = {
    "float64": "fp64", "double": "fp64",
    "float32": "fp32", "float": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16", "half": "fp16",
    "float8": "fp8", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "float8_e4m3fnuz": "fp8",
    "float8_e5m2fnuz": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8",
    "long": "int64", "int": "int32", "short": "int16",
    "cfloat": "complex64", "cdouble": "complex128",
}

FLOAT_DTYPES = frozenset({"fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp4"})


def normalize_dtype(name: str) -> str:
    """Canonical dtype name: 'torch.bfloat16', 'bfloat16' and 'bf16' all give 'bf16'."""
    key = str(name).strip().lower().removeprefix("torch.")
    key = _DTYPE_ALIASES.get(key, key)
    if key not in DTYPE_BITS:
        known = ", ".join(sorted(DTYPE_BITS))
        raise ConfigError(f"unknown dtype {name!r}: expected one of {known}")
    return key


def dtype_bits(dtype: str) -> int:
    return DTYPE_BITS[normalize_dtype(dtype)]


def nbytes(numel: int, dtype: str) -> int:
    """Bytes of `numel` packed elements of `dtype` (sub-byte dtypes round up to whole bytes)."""
    return -(-numel * dtype_bits(dtype) // BITS_PER_BYTE)


def bits_to_bytes(bits: float) -> float:
    return bits / BITS_PER_BYTE


# ---- plausible bounds of user-given quantities (flags, scenarios); each error names its bound ---------

MAX_GPUS = 100_000
"""GPUs in one job or deployment (the largest clusters built hold about 10**5)."""
MAX_PARALLEL = 4096
"""One parallelism degree (tp, pp, vp, ep)."""
MAX_BATCH = 10**7
"""Sequences in one batch."""
MAX_TOKENS = 10**15
"""Tokens of one prompt, output or context before the model's own context is checked."""
MAX_TRAINING_TOKENS = 10**16
"""Tokens of a training job (the largest public runs use a few 10**13)."""
MAX_LAYERS = 1000
MAX_USERS = 10**10
MAX_REQUESTS_PER_S = 10**9
MAX_SLA_S = 86_400.0
"""An SLA target: one day at most."""
MAX_USD = 10**12
MAX_LIST_ITEMS = 256
"""Distinct names in one list (devices, providers, engines, quantizations)."""
MAX_NAME_CHARS = 256


# ---- parsing of user-facing quantities -------------------------------------------------------

_NUMBER = r"[-+]?(?:[0-9][0-9_]*\.?[0-9_]*|\.[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)?"
_QUANTITY = re.compile(rf"^\s*({_NUMBER})\s*([A-Za-zµ/%]*)\s*$")
_NOT_FINITE = {"nan", "inf", "infinity"}

UNITS: dict[str, dict[str, float]] = {
    # the unit a flag means -> the suffixes it accepts and their factor to that unit; "" is a bare number
    "s": {"": 1.0, "s": 1.0, "sec": 1.0, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "m": 60.0, "min": 60.0,
          "h": 3600.0, "d": 86400.0},
    "bytes": {"": 1.0, "B": 1.0, "KiB": KIB, "MiB": MIB, "GiB": GIB, "TiB": TIB, "kB": KILO, "KB": KILO,
              "MB": MEGA, "GB": GIGA, "TB": TERA},
    "Gbit/s": {"": 1.0, "Gbps": 1.0, "gbps": 1.0, "Gb/s": 1.0, "Gbit/s": 1.0, "gbit/s": 1.0, "Mbps": 1e-3,
               "mbps": 1e-3, "Mb/s": 1e-3, "Mbit/s": 1e-3, "Tbps": 1e3, "tbps": 1e3, "Tb/s": 1e3, "Tbit/s": 1e3,
               "GB/s": BITS_PER_BYTE, "MB/s": BITS_PER_BYTE / KILO, "TB/s": BITS_PER_BYTE * KILO},
    "count": {"": 1.0, "k": KILO, "K": KILO, "M": MEGA, "B": GIGA, "G": GIGA, "T": TERA},
}
"""Suffixes by unit: "s" durations (200ms, 2h), "bytes" sizes (16GiB), "Gbit/s" network links (25GB/s = 200),
"count" large counts such as tokens (2B, 500M)."""


_UNIT_WORDS = {"s": "seconds (or with a unit: 200ms, 1.5s, 2min, 1h)",
               "bytes": "bytes (or with a unit: 512MiB, 16GiB, 2TB)",
               "Gbit/s": "Gb/s (or with a unit: 400Gbps, 100Mbps, 25GB/s)",
               "count": "(or with a suffix: 500k, 20M, 2B, 1T)"}


def _bound(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() and abs(value) < 1e16 else f"{value:g}".replace("e+", "e")


class NotANumber(ConfigError):
    """Text that is no number at all ('two'), as opposed to a number out of bounds or not finite."""


def _expected(integer: bool, minimum: float | None, maximum: float | None, above: float | None,
              below: float | None, unit: str | None) -> str:
    parts = []
    for sign, bound in ((">", above), (">=", minimum), ("<", below), ("<=", maximum)):
        if bound is not None:
            parts.append(f"{sign} {_bound(bound)}")
    kind = "a whole number" if integer else "a number"
    if (integer and minimum == 1 and above is None) or (above == 0 and minimum is None):
        kind, parts = f"a positive {'integer' if integer else 'number'}", parts[1:]
    text = f"{kind}{' ' if parts else ''}{' and '.join(parts)}"
    return f"{text} {_UNIT_WORDS[unit]}" if unit else text


def check_number(value: object, *, what: str, integer: bool = False, minimum: float | None = None,
                 maximum: float | None = None, above: float | None = None, below: float | None = None,
                 expected: str | None = None) -> int | float:
    """`value` (already a number, e.g. from YAML or JSON) checked: not a bool, finite, whole when
    `integer`, within `minimum`/`maximum` (inclusive) and `above`/`below` (exclusive). Raises a
    ConfigError naming `what`, the value and what was expected."""
    want = expected or _expected(integer, minimum, maximum, above, below, None)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{what} = {_shown(value)}: expected {want}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ConfigError(f"{what} = {value!r}: not a finite number; expected {want}")
        if integer:
            if not value.is_integer():
                raise ConfigError(f"{what} = {value!r}: expected {want}")
            value = int(value)
    for bound, ok in ((minimum, lambda v, b: v >= b), (above, lambda v, b: v > b),
                      (maximum, lambda v, b: v <= b), (below, lambda v, b: v < b)):
        if bound is not None and not ok(value, bound):
            raise ConfigError(f"{what} = {_shown(value)}: expected {want}")
    if integer:
        return value
    if isinstance(value, int) and abs(value) > _LARGEST_FLOAT:  # float(10**400) would overflow
        raise ConfigError(f"{what} = {_shown(value)}: too large; expected {want}")
    return float(value)


_LARGEST_FLOAT = 1.7976931348623157e308


def _shown(value: object) -> str:
    """A value quoted as the user wrote it: a plain token as it is (-2, 1e9, 500ms), else repr()."""
    if isinstance(value, str) and re.fullmatch(r"[\w.+\-/%µ]{1,60}", value):
        return value
    text = repr(value)
    size = len(value) if isinstance(value, (str, bytes, list, dict)) else len(text)
    unit = ("characters" if isinstance(value, (str, bytes)) else "entries" if isinstance(value, (list, dict))
            else "digits")
    return text if len(text) <= 60 else text[:40] + f"… ({size:,} {unit})"


def parse_number(text: str, *, what: str, integer: bool = False, minimum: float | None = None,
                 maximum: float | None = None, above: float | None = None, below: float | None = None,
                 unit: str | None = None) -> int | float:
    """A number typed by a user ('1e9', '500ms', '2B', '25GB/s'), in `unit` (a key of UNITS) when given,
    checked as `check_number` does. NaN and ±Infinity are refused; so are bools and empty text."""
    want = _expected(integer, minimum, maximum, above, below, unit)
    raw = str(text)
    match = _QUANTITY.match(raw) if len(raw) <= 100 else None
    if match is None:
        bare = raw.strip().lower().lstrip("+-")
        if bare in _NOT_FINITE:
            raise ConfigError(f"{what} {_shown(raw)}: not a finite number; expected {want}")
        raise NotANumber(f"{what} {_shown(raw)}: expected {want}")
    number, suffix = match.groups()
    scale = UNITS[unit].get(suffix) if unit else (1.0 if not suffix else None)
    if scale is None:
        raise ConfigError(f"{what} {_shown(raw)}: unknown unit {suffix!r}; expected {want}")
    number = number.replace("_", "")
    if integer and scale == 1.0 and re.fullmatch(r"[-+]?[0-9]+", number):
        value: int | float = int(number)  # exact, however long
    else:
        try:
            value = float(number) * scale
        except (ValueError, OverflowError):
            raise ConfigError(f"{what} {_shown(raw)}: expected {want}") from None
        if not math.isfinite(value):
            raise ConfigError(f"{what} {_shown(raw)}: too large; expected {want}")
        if integer:
            if not value.is_integer():
                raise ConfigError(f"{what} {_shown(raw)}: expected {want}")
            value = int(value)
    try:
        return check_number(value, what=what, integer=integer, minimum=minimum, maximum=maximum, above=above,
                            below=below, expected=want)
    except ConfigError:
        raise ConfigError(f"{what} {_shown(raw)}: expected {want}") from None


def number_flag(*, integer: bool = False, minimum: float | None = None, maximum: float | None = None,
                above: float | None = None, below: float | None = None, unit: str | None = None):
    """An argparse `type=` for a numeric flag: `number_flag(integer=True, minimum=1, maximum=MAX_GPUS)`,
    `number_flag(above=0, maximum=MAX_SLA_S, unit="s")`. NaN, ±Infinity, out-of-bounds values and (with
    `integer`) fractions are refused. In `sizeup.cli.main`'s parser (see `named_number_flag`) a bad value
    is the one line `--flag VALUE: expected …`; in any other parser argparse reports the same text after
    'argument --flag: '; there text that is no number at all reads as argparse's own 'invalid int value: …'.
    The converter keeps its checks in `.checks` (the keyword arguments of `parse_number`)."""
    checks = {"integer": integer, "minimum": minimum, "maximum": maximum, "above": above, "below": below,
              "unit": unit}

    def convert(text: str) -> int | float:
        import argparse

        try:
            return parse_number(text, what="value", **checks)
        except NotANumber:
            raise ValueError(text) from None
        except ConfigError as e:
            raise argparse.ArgumentTypeError(str(e).removeprefix("value ")) from None

    convert.__name__ = _type_name(checks)
    convert.checks = checks  # type: ignore[attr-defined]
    return convert


def named_number_flag(flag: str, checks: dict):
    """The converter of `number_flag(**checks)` for the flag named `flag`: a value out of bounds, or text that is no
    number at all, raises the ConfigError `--flag VALUE: expected …` (argparse lets it through to the CLI's
    boundary), so `--batcher-window abc` says what it expected rather than argparse's 'invalid duration value'."""

    def convert(text: str) -> int | float:
        return parse_number(text, what=flag, **checks)

    convert.__name__ = _type_name(checks)
    convert.checks = checks  # type: ignore[attr-defined]
    return convert


def _type_name(checks: dict) -> str:
    """What argparse calls the value in 'invalid … value': int / float as its own types, else the unit."""
    by_unit = {"s": "duration", "bytes": "size", "Gbit/s": "bandwidth"}
    return by_unit.get(checks.get("unit"), "int" if checks.get("integer") else "float")


def parse_duration_s(text: str) -> float:
    """'200ms' -> 0.2, '2h' -> 7200.0, '10' -> 10.0 (seconds); positive or zero, finite."""
    try:
        return parse_number(text, what="duration", minimum=0.0, unit="s")
    except ConfigError as e:
        reason = str(e).partition(": ")[2]
        raise ConfigError(f"invalid duration {str(text)!r}: {reason}") from None


# ---- formatting (reports call these; they never convert on their own) ------------------------

_SI_PREFIXES = ((PETA, "P"), (TERA, "T"), (GIGA, "G"), (MEGA, "M"), (KILO, "k"))


def format_si(value: float, unit: str, digits: int = 3) -> str:
    """872_415_232, 'FLOP' -> '872 MFLOP'."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g} {unit}"
    for scale, prefix in _SI_PREFIXES:
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}"


def format_bytes(value: float, digits: int = 3) -> str:
    """Binary prefixes: 1536 -> '1.5 KiB'."""
    for scale, prefix in ((TIB, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")):
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {prefix}"
    return f"{value:.0f} B"


def format_seconds(value: float, digits: int = 3) -> str:
    if value >= 2 * 86400:
        return f"{value / 86400:.{digits}g} days"
    if value >= 2 * 3600:
        return f"{value / 3600:.{digits}g} h"
    if value >= 120:
        return f"{value / 60:.{digits}g} min"
    if value >= 1:
        return f"{value:.{digits}g} s"
    if value >= 1e-3:
        return f"{value * 1e3:.{digits}g} ms"
    return f"{value * 1e6:.{digits}g} µs"


def spoken_metric(key: str) -> str:
    """A metric key as a reader writes it: 'ttft_p999' -> 'TTFT p99.9', 'tpot_p95_s' -> 'TPOT p95'.
    JSON and scenario files keep the keys; only what people read changes."""
    parts = [part for part in key.split("_") if part != "s"]
    words = []
    for part in parts:
        if part == "p999":
            words.append("p99.9")
        elif part in ("ttft", "tpot", "e2e", "itl"):
            words.append(part.upper())
        else:
            words.append(part)
    return " ".join(words)
