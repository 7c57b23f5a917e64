"""The shared command line of the validate_*.py scripts: which rows, how to print them."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from . import loso, rows, summary


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--rows", action="store_true", help="print every row")
    p.add_argument("--loso", action="store_true",
                   help="also leave-one-source-out: the fitted figures (validation/tables.py) set again without each "
                        "row's source (takes minutes: every tuned row is bisected through its command)")
    return p


def report(selected: list[rows.Row], groups: list[tuple[str, Callable[[summary.Result], str | None]]], *,
           show_rows: bool, with_loso: bool, columns: tuple[str, ...] = ("role", "device", "engine")) -> None:
    results = summary.evaluate(selected)
    if show_rows:
        print(summary.rows_table(results, columns))
        print()
    for title, key in groups:
        print(summary.table(results, key, title))
        print()
    unknown = [r.row.id for r in results if r.predicted is None]
    if unknown:
        print(f"not predicted (the device lists no compute peak for these FLOPs): {', '.join(unknown)}\n")
    if with_loso:
        fitted = loso.fit(rows.load())
        out = loso.results(selected, fitted)
        print("leave-one-source-out: each row priced with the figures fitted on tuned rows set again without its "
              "source (benchmarks/validation/tables.py states each figure's rule and fallback)\n")
        for title, key in groups:
            print(summary.table(out, key, f"{title} (LOSO)"))
            print()
