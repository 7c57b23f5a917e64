"""What the measurement commands share: integer lists from flags."""

from __future__ import annotations

__all__ = ["positive_ints"]


def positive_ints(text: str, what: str) -> tuple[int, ...]:
    from sizeup.errors import MeasureError

    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise MeasureError(f"{what} {text!r}: expected integers like 1,2,4") from None
    if not values or min(values) < 1:
        raise MeasureError(f"{what} {text!r}: every value must be a positive integer")
    return values
