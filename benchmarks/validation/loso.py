"""Leave-one-source-out: every row predicted with the fitted figures (tables.py) set again without the row's own
source, so that no row is judged by a figure it helped set. A row whose source set no figure is predicted as in
sample; so is every row of a figure nothing else backs only when its fallback is that figure (stated per figure)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from . import tables
from .rows import Row
from .runner import Prediction, context, predict
from .summary import Result


@dataclass
class Fit:
    figures: dict[str, tables.Fitted]
    implied: dict[tuple[str, str], float | None]
    """(figure key, row id) -> the row's implied value (None: the figure cannot reproduce the row)."""

    def values(self, exclude: str | None = None) -> dict[str, float | None]:
        """Each figure by its rule from its rows outside source `exclude` (None: no row left -> its fallback);
        only figures that had a row of `exclude` (all of them with exclude None)."""
        out = {}
        for key, f in self.figures.items():
            if exclude is not None and all(r.source != exclude for r in f.rows):
                continue
            kept = [self.implied[key, r.id] for r in f.rows if r.source != exclude]
            kept = [v for v in kept if v is not None]
            out[key] = statistics.median(kept) if kept else None
        return out

    def sources(self) -> set[str]:
        return {r.source for f in self.figures.values() for r in f.rows}


def fit(rows: list[Row], progress: Callable[[str], None] | None = None) -> Fit:
    figures = tables.fitted_figures(rows)
    implied = {}
    for key, f in figures.items():
        for r in f.rows:
            if progress:
                progress(f"implied {key} <- {r.id}")
            implied[key, r.id] = tables.implied(r, key)
    return Fit(figures, implied)


def allocator_sources() -> set[str]:
    from sizeup.workload.training.allocator import reserve_sources

    return set(reserve_sources())


def predictions(rows: list[Row], fitted: Fit) -> dict[str, Prediction | None]:
    """Each row's leave-one-source-out prediction."""
    out: dict[str, Prediction | None] = {}
    by_source: dict[str, list[Row]] = {}
    for r in rows:
        by_source.setdefault(r.source, []).append(r)
    refit_sources = fitted.sources() | allocator_sources()
    for source, members in by_source.items():
        if source not in refit_sources:
            out.update((r.id, predict(r)) for r in members)
            continue
        with tables.values(fitted.values(exclude=source), f"loso {source}"), tables.allocator_without(source):
            out.update((r.id, predict(r)) for r in members)
    return out


def fell_back(row: Row, fitted: Fit) -> bool:
    """Whether leaving the row's source out leaves its own fitted figure without any row."""
    key = tables.figure_key(row)
    return key is not None and key in fitted.figures and fitted.values(exclude=row.source).get(key, 0) is None


def results(rows: list[Row], fitted: Fit) -> list[Result]:
    preds = predictions(rows, fitted)
    return [Result(row=r, context=context(r), predicted=preds[r.id], fallback=fell_back(r, fitted)) for r in rows]
