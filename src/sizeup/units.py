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


# ---- parsing of user-facing quantities -------------------------------------------------------

_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(us|ms|s|m|min|h)?\s*$")
_DURATION_SCALE = {None: 1.0, "s": 1.0, "us": 1e-6, "ms": 1e-3, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_duration_s(text: str) -> float:
    """'200ms' -> 0.2, '2h' -> 7200.0, '10' -> 10.0 (seconds)."""
    match = _DURATION.match(str(text))
    if not match:
        raise ConfigError(f"invalid duration {text!r}: expected a number with an optional unit us|ms|s|min|h")
    return float(match.group(1)) * _DURATION_SCALE[match.group(2)]


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
    return f"{value * 1e6:.{digits}g} us"
