"""Errors of predicted rows, summarised one way for every script: rows, median |error|, p90 |error|, median bias
(signed error), and the share of measured values inside the printed low-high range.

A bound row (rows.py `bound`: the source's value only bounds what it measured) has no error of its own: it is left
out of the medians and the bias, and its range counts as inside when it reaches the side of the bound the
measurement lies on (an upper bound: the range's low end at or below it; a lower bound: the high end at or above).
`correct_side` says whether the typical figure itself lies on that side."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .rows import Row
from .runner import COUNTED_KINDS, Context, Prediction, context, predict


@dataclass(frozen=True)
class Result:
    row: Row
    context: Context
    predicted: Prediction | None
    """None: the estimate leaves the figure unknown (no compute peak for the device)."""
    fallback: bool = False
    """Leave-one-source-out removed every row the row's own fitted figure rested on: it was priced with the
    figure's fallback (tables.py), a table without that entry rather than the one users get."""

    @property
    def error(self) -> float:
        """predicted typical / measured - 1 (for a bound row: to the bound)."""
        return self.predicted.typical / self.row.value - 1

    @property
    def bound(self) -> str | None:
        return self.row.bound

    @property
    def inside(self) -> bool | None:
        """Whether the measured value lies in the printed range (None for a counted figure: no range); for a bound
        row, whether the range reaches the side of the bound the measurement lies on."""
        if self.context.kind in COUNTED_KINDS:
            return None
        p, v = self.predicted, self.row.value
        reaches_low, reaches_high = p.low * (1 - 1e-9) <= v, v <= p.high * (1 + 1e-9)
        if self.bound == "upper":
            return reaches_low
        if self.bound == "lower":
            return reaches_high
        return reaches_low and reaches_high

    @property
    def correct_side(self) -> bool | None:
        """For a bound row, whether the typical figure lies on the bound's side (None for a measured value)."""
        if self.bound is None:
            return None
        return self.predicted.typical <= self.row.value if self.bound == "upper" else \
            self.predicted.typical >= self.row.value


def evaluate(rows: Iterable[Row]) -> list[Result]:
    """Every row through its command; rows whose figure is unknown are kept with `predicted` None."""
    return [Result(row=r, context=context(r), predicted=predict(r)) for r in rows]


def priced(results: Iterable[Result]) -> list[Result]:
    return [r for r in results if r.predicted is not None]


def measured(results: Iterable[Result]) -> list[Result]:
    """The rows whose value is a measurement (not a bound): the ones that have an error."""
    return [r for r in results if r.bound is None]


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


@dataclass(frozen=True)
class Stats:
    rows: int
    median: float
    p90: float
    bias: float
    inside: float | None
    bounds: int = 0
    """Of `rows`, the bound rows: counted in `inside` (by side), not in the errors."""

    @classmethod
    def of(cls, errors: list[float], inside: list[bool | None], bounds: int = 0) -> Stats:
        flags = [i for i in inside if i is not None]
        nan = float("nan")
        return cls(rows=len(errors) + bounds, median=statistics.median(abs(e) for e in errors) if errors else nan,
                   p90=p90([abs(e) for e in errors]) if errors else nan,
                   bias=statistics.median(errors) if errors else nan, inside=sum(flags) / len(flags) if flags else None,
                   bounds=bounds)

    @classmethod
    def of_results(cls, results: Iterable[Result]) -> Stats:
        """Errors of the measured rows; inside (bound rows by side) of all."""
        results = priced(results)
        return cls.of([r.error for r in measured(results)], [r.inside for r in results],
                      bounds=len(results) - len(measured(results)))

    def cells(self) -> list[str]:
        rows = f"{self.rows}" + (f" ({self.bounds} bounds)" if self.bounds else "")
        if self.rows == self.bounds:  # only bounds: no error to state
            return [rows, "-", "-", "-", "" if self.inside is None else f"{self.inside:.0%}"]
        return [rows, f"{self.median:.1%}", f"{self.p90:.1%}", f"{self.bias:+.1%}",
                "" if self.inside is None else f"{self.inside:.0%}"]


def stats(results: list[Result]) -> Stats:
    return Stats.of_results(results)


def grouped(results: Iterable[Result], key: Callable[[Result], str | None]) -> dict[str, Stats]:
    groups: dict[str, list[Result]] = {}
    for r in priced(results):
        name = key(r)
        if name is not None:
            groups.setdefault(name, []).append(r)
    return {name: stats(rs) for name, rs in sorted(groups.items())}


def table(results: Iterable[Result], key: Callable[[Result], str | None], title: str) -> str:
    lines = [f"| {title} | rows | median abs error | p90 abs error | median bias | inside range |",
             "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {name} | " + " | ".join(s.cells()) + " |" for name, s in grouped(results, key).items()]
    return "\n".join(lines)


def rows_table(results: Iterable[Result], columns: tuple[str, ...] = ("role", "device", "engine")) -> str:
    """One line per row: id, the context columns asked for, measured, predicted (low - high), error, inside."""
    head = ["id", *columns, "metric", "measured", "predicted (low - high)", "error", "in range"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(columns) + "---|---|---:|---:|---:|:-:|"]
    for r in results:
        ctx = {"role": r.row.role, "device": r.context.device, "engine": r.context.engine, "source": r.row.source,
               "class": r.context.device_class, "file": r.row.file}
        cells = [r.row.id + (" †" if r.row.get("off_catalog") else ""), *(ctx[c] for c in columns), r.row.metric,
                 f"{r.row.value:,.4g}"]
        if r.predicted is None:
            cells += ["unknown (no compute peak)", "", ""]
        else:
            p = r.predicted
            span = "" if r.inside is None else f" ({p.low:,.4g} - {p.high:,.4g})"
            inside = "" if r.inside is None else ("yes" if r.inside else "no")
            if r.bound is not None:
                inside += f" ({r.bound} bound; typical on its side: {'yes' if r.correct_side else 'no'})"
            cells += [f"{p.typical:,.4g}{span}", f"{r.error:+.1%}", inside]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
