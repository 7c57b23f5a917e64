"""The value types of the compute requirement sheet: a `Cell` (a value, and for the key figures an Excel
formula over other cells' keys written as `{key}` placeholders), a `Section` and the `Sheet`; plan.sheet
builds them, every renderer formats them without recomputing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sizeup.plan.headline import Headline

__all__ = ["Cell", "Section", "Sheet"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Cell:
    key: str
    """Unique within the sheet; letters, digits and underscores."""
    label: str
    value: float | int | str | bool | None
    unit: str = ""
    """"USD", "USD/h", "req/s", "s", "bytes", "%", "" …"""
    formula: str | None = None
    """Excel formula with {key} placeholders; None for plain values."""
    note: str = ""
    load: str = ""
    """A latency figure's load (plan.sheet_load): "peak" or "unloaded"; "" for any other cell."""

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "label": self.label, "value": self.value, "unit": self.unit,
                "formula": self.formula, "note": self.note, **({"load": self.load} if self.load else {})}


@dataclass(frozen=True, slots=True, kw_only=True)
class Section:
    title: str
    cells: tuple[Cell, ...] = ()
    table_headers: tuple[str, ...] = ()
    table_rows: tuple[tuple[Any, ...], ...] = ()
    """An optional table (e.g. the runners-up and why each lost)."""
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "cells": [c.to_dict() for c in self.cells],
                "table": {"headers": list(self.table_headers), "rows": [list(r) for r in self.table_rows]},
                "notes": list(self.notes)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Sheet:
    title: str
    scenario: str
    meets: bool
    """False when no configuration meets the scenario (the sheet then shows the closest option)."""
    verdict: str
    inputs: tuple[Cell, ...]
    """Editable inputs (traffic, prices, SLA targets) that the XLSX formulas refer to."""
    sections: tuple[Section, ...]
    """Hardware selection, cost budget, SLA commitment, fault plan — in that order."""
    assumptions: tuple[str, ...] = ()
    plots: dict[str, str] = field(default_factory=dict)
    """Plot name -> PNG path, when plots were drawn."""
    headline: Headline | None = None
    """What to buy or rent and what it costs on one pricing basis: every renderer shows it first."""

    def cells(self) -> dict[str, Cell]:
        out = {c.key: c for c in self.inputs}
        for section in self.sections:
            out.update({c.key: c for c in section.cells})
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "scenario": self.scenario, "meets": self.meets, "verdict": self.verdict,
                "inputs": [c.to_dict() for c in self.inputs], "sections": [s.to_dict() for s in self.sections],
                "assumptions": list(self.assumptions), "plots": dict(self.plots),
                "headline": None if self.headline is None else self.headline.to_dict()}
