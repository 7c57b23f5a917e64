"""A predicted quantity: low / typical / high, with the assumptions behind it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Range", "check_sourced", "parse_entry"]

_ENTRY_KEYS = {"low", "typical", "high", "basis", "source", "retrieved"}


@dataclass(frozen=True, slots=True)
class Range:
    low: float
    typical: float
    high: float

    def __post_init__(self) -> None:
        if not self.low <= self.typical <= self.high:
            raise ValueError(f"range out of order: {self.low} <= {self.typical} <= {self.high} does not hold")

    @classmethod
    def exact(cls, value: float) -> Range:
        return cls(value, value, value)

    @classmethod
    def parse(cls, data: Any, what: str) -> Range:
        """From a {low, typical, high} mapping; raises ValueError naming `what`."""
        try:
            return cls(float(data["low"]), float(data["typical"]), float(data["high"]))
        except (TypeError, KeyError, ValueError) as e:
            raise ValueError(f"{what}: expected {{low, typical, high}} numbers in order, got {data!r}") from e

    def __add__(self, other: Range | float) -> Range:
        if isinstance(other, Range):
            return Range(self.low + other.low, self.typical + other.typical, self.high + other.high)
        return Range(self.low + other, self.typical + other, self.high + other)

    __radd__ = __add__

    def scale(self, factor: float) -> Range:
        values = sorted((self.low * factor, self.typical * factor, self.high * factor))
        return Range(*values)

    def inverse(self, numerator: float = 1.0) -> Range:
        """numerator / x, with low and high swapped (e.g. time -> rate)."""
        return Range(numerator / self.high, numerator / self.typical, numerator / self.low)

    def to_dict(self) -> dict[str, float]:
        return {"low": self.low, "typical": self.typical, "high": self.high}


def check_sourced(data: dict, path: Any, key: str, allowed) -> None:
    """A data file's entry `key` at `path` names only `allowed` fields and states its basis, source and retrieved
    date. Raises CatalogError naming the field."""
    from sizeup.errors import CatalogError

    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise CatalogError(f"{path}: unknown field '{key}.{unknown[0]}'")
    for name in ("basis", "source", "retrieved"):
        if not data.get(name):
            raise CatalogError(f"{path}: missing field '{key}.{name}'")


def parse_entry(data: object, path: Any, key: str, fraction: bool) -> tuple[Range, str]:
    """One sourced {low, typical, high, basis, source, retrieved} entry of a data file at `path`, and its source line;
    `fraction`: a fraction of a peak, in (0, 1]. Raises CatalogError naming the field."""
    from sizeup.errors import CatalogError

    if not isinstance(data, dict):
        raise CatalogError(f"{path}: field '{key}' must be a mapping with low, typical, high, basis, source, retrieved")
    check_sourced(data, path, key, _ENTRY_KEYS)
    try:
        value = Range.parse(data, f"{path}: field '{key}'")
    except ValueError as e:
        raise CatalogError(str(e)) from None
    if value.low <= 0 or (fraction and value.high > 1):
        raise CatalogError(f"{path}: field '{key}' = {data.get('high')!r}: expected fractions in (0, 1]")
    return value, f"{key}: {data['source']} (read {data['retrieved']})"
