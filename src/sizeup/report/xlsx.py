"""The compute requirement sheet as an .xlsx workbook with live formulas (openpyxl, an optional extra).

Two worksheets: "inputs" (one row per editable input: label, value, unit, note) and "sheet" (per section
a bold title row, one row per cell, then the section's table). A cell with a `formula` is written as an
Excel formula whose `{key}` placeholders become absolute references to the cells holding those keys —
`inputs!$B$n` for an input, `$B$m` for a cell on the "sheet" worksheet — so editing an input updates
the sheet when the workbook is recalculated (Excel and LibreOffice do so on opening).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sizeup.errors import ConfigError
from sizeup.plan.sheet import Cell, Sheet

__all__ = ["write_xlsx"]

INPUTS_TITLE = "inputs"
SHEET_TITLE = "sheet"
_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_]+)\}")
_NUMBER_FORMATS = {"USD": '"$"#,##0.00', "%": "0.0%", "bytes": "#,##0"}
_MAX_WIDTH = 60


@dataclass(frozen=True, slots=True, kw_only=True)
class _Row:
    """One row to write: its kind decides the styling."""

    kind: str
    """"title", "header", "cell", "row" or "note"."""
    values: tuple[Any, ...]
    cell: Cell | None = None


def _cell_row(cell: Cell) -> _Row:
    return _Row(kind="cell", values=(cell.label, cell.value, cell.unit, cell.note), cell=cell)


def _plain(value: Any) -> Any:
    """Numbers, strings, booleans and None go in as they are; anything else as its text."""
    return value if value is None or isinstance(value, (int, float, str, bool)) else str(value)


def _layout(sheet: Sheet) -> tuple[list[_Row], list[_Row]]:
    """The rows of the "inputs" and "sheet" worksheets, in order (row 1 first)."""
    inputs = [_Row(kind="header", values=("input", "value", "unit", "note"))]
    inputs += [_cell_row(c) for c in sheet.inputs]
    rows = [_Row(kind="title", values=(sheet.title,)), _Row(kind="note", values=(sheet.verdict,)),
            _Row(kind="row", values=())]
    for section in sheet.sections:
        rows.append(_Row(kind="title", values=(section.title,)))
        rows += [_cell_row(c) for c in section.cells]
        if section.table_rows:
            rows.append(_Row(kind="header", values=tuple(section.table_headers)))
            rows += [_Row(kind="row", values=tuple(_plain(v) for v in r)) for r in section.table_rows]
        rows += [_Row(kind="note", values=(n,)) for n in section.notes]
        rows.append(_Row(kind="row", values=()))
    if sheet.assumptions:
        rows.append(_Row(kind="title", values=("Assumptions",)))
        rows += [_Row(kind="note", values=(a,)) for a in sheet.assumptions]
    return inputs, rows


def _references(inputs: list[_Row], rows: list[_Row]) -> dict[str, tuple[str, int]]:
    """Cell key -> (worksheet title, row) of its value, which sits in column B."""
    refs: dict[str, tuple[str, int]] = {}
    for title, table in ((INPUTS_TITLE, inputs), (SHEET_TITLE, rows)):
        for n, row in enumerate(table, start=1):
            if row.cell is not None:
                if row.cell.key in refs:
                    raise ValueError(f"duplicate cell key {row.cell.key!r}: formulas would be ambiguous")
                refs[row.cell.key] = (title, n)
    return refs


def resolve_formula(formula: str, refs: dict[str, tuple[str, int]], here: str = SHEET_TITLE) -> str:
    """`formula` with each `{key}` placeholder replaced by the absolute reference of that key's value,
    as seen from worksheet `here`: "$B$7" on the same worksheet, "inputs!$B$3" on another."""
    def swap(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in refs:
            raise ValueError(f"formula {formula!r} refers to unknown key {key!r}")
        title, n = refs[key]
        return f"$B${n}" if title == here else f"{title}!$B${n}"

    text = _PLACEHOLDER.sub(swap, formula)
    return text if text.startswith("=") else "=" + text


def _resolved(rows: list[_Row], refs: dict[str, tuple[str, int]], here: str) -> list[tuple[Any, ...]]:
    out = []
    for row in rows:
        values = row.values
        if row.cell is not None and row.cell.formula is not None:
            values = (values[0], resolve_formula(row.cell.formula, refs, here), *values[2:])
        out.append(tuple(_plain(v) for v in values))
    return out


def _fill(ws, rows: list[_Row], values: list[tuple[Any, ...]], fonts: tuple[Any, Any, Any]) -> None:
    """Write the values of `rows`, styled by row kind, with number formats by unit and fitted column widths."""
    from openpyxl.utils import get_column_letter

    font_bold, font_title, font_note = fonts
    widths: dict[int, int] = {}
    for n, (row, vals) in enumerate(zip(rows, values), start=1):
        for col, value in enumerate(vals, start=1):
            if value is None or value == "":
                continue
            target = ws.cell(row=n, column=col, value=value)
            if row.kind == "header":
                target.font = font_bold
            elif row.kind == "title" and col == 1:
                target.font = font_title
            elif row.kind == "note":
                target.font = font_note
            elif row.kind == "cell" and col == 2 and row.cell is not None:
                unit = row.cell.unit
                fmt = _NUMBER_FORMATS.get("USD" if unit.startswith("USD") else unit)
                if fmt and not isinstance(row.cell.value, (str, bool)):
                    target.number_format = fmt
            if row.kind not in ("title", "note"):  # long titles and notes may overflow to the right
                shown = len(str(value)) if not (isinstance(value, str) and value.startswith("=")) else 12
                widths[col] = max(widths.get(col, 0), shown)
    for col, width in widths.items():
        ws.column_dimensions[get_column_letter(col)].width = min(_MAX_WIDTH, max(10, width + 2))


def write_xlsx(sheet: Sheet, path: str) -> None:
    """Write the sheet to `path` as an .xlsx workbook whose formula cells refer to the inputs.

    Raises ValueError naming the key when a formula placeholder matches no cell, before anything is
    written, and ConfigError when openpyxl is not installed.
    """
    try:
        from openpyxl import Workbook
        from openpyxl.styles import Font
    except ImportError as e:
        raise ConfigError("writing .xlsx needs openpyxl: pip install 'sizeup[xlsx]'") from e

    input_rows, sheet_rows = _layout(sheet)
    refs = _references(input_rows, sheet_rows)
    input_values = _resolved(input_rows, refs, INPUTS_TITLE)
    sheet_values = _resolved(sheet_rows, refs, SHEET_TITLE)

    wb = Workbook()
    ws_inputs = wb.active
    ws_inputs.title = INPUTS_TITLE
    ws_sheet = wb.create_sheet(SHEET_TITLE)
    fonts = (Font(bold=True), Font(bold=True, size=13), Font(italic=True, color="555555"))
    _fill(ws_inputs, input_rows, input_values, fonts)
    _fill(ws_sheet, sheet_rows, sheet_values, fonts)
    ws_inputs.freeze_panes = "A2"
    wb.save(path)
