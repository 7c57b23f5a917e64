"""One kind's rows, judged the way the range table judges them (benchmarks/fit_ranges.py --rows): per row its error in
sample (the shipped tables) and leave-one-source-out, and whether its LOSO ratio lies inside the range of the table
built from all rows and of the table built without its source; then the same per engine key. A bound row (rows.py
`bound`) has no error of its own: its errors are left out of the medians and it is judged by side."""

from __future__ import annotations

import statistics
from collections.abc import Callable

from . import ranges_fit
from .summary import Result, p90


def _pct(x: float | None, signed: bool = False) -> str:
    if x is None:
        return ""
    return f"{x:+.1%}" if signed else f"{x:.1%}"


def _bound(r: Result) -> str | None:
    return r.row.get("bound")


def select(results: list[Result], kind: str, engine_part: str | None) -> list[Result]:
    """The usable rows of `kind` whose engine key contains `engine_part` (e.g. 'qlora')."""
    return [r for r in ranges_fit.usable(results) if r.context.kind == kind
            and (engine_part is None or engine_part in r.context.engine.split("/"))]


def report(in_sample: list[Result], loso: list[Result], table: dict, judged: dict, kind: str,
           engine_part: str | None) -> str:
    """Markdown: the rows of `kind` (engine key containing `engine_part`), then a summary per engine key and overall;
    `table` built from all rows, `judged` ranges_fit.loso_judged of `loso`."""
    ins = {r.row.id: r for r in in_sample}
    chosen = select(loso, kind, engine_part)
    judged_all = ranges_fit._judge((r, table) for r in chosen)
    judged_loso = {k: v for k, v in judged.items() if k in judged_all}
    lines = ["| row | source | engine key | class | measured | error in sample | error LOSO | inside (table from all "
             "rows) | inside (table without its source) |", "|---|---|---|---|---:|---:|---:|:-:|:-:|"]
    for r in sorted(chosen, key=lambda r: (r.context.engine, r.row.source, r.row.id)):
        i = ins.get(r.row.id)
        mark = f" ({_bound(r)} bound)" if _bound(r) else ""
        lines.append(f"| {r.row.id}{mark} | {r.row.source} | {r.context.engine} | {r.context.device_class} | "
                     f"{r.row.value:,.4g} | {_pct(i.error if i and i.predicted else None, True)} | "
                     f"{_pct(r.error, True)} | {'yes' if judged_all[r.row.id][1] else 'no'} | "
                     f"{'yes' if judged_loso[r.row.id][1] else 'no'} |")
    lines += ["", summary_table(chosen, ins, judged_all, judged_loso, lambda r: r.context.engine)]
    return "\n".join(lines)


def summary_table(chosen: list[Result], ins: dict[str, Result], judged_all: dict, judged_loso: dict,
                  key: Callable[[Result], str]) -> str:
    groups: dict[str, list[Result]] = {}
    for r in chosen:
        groups.setdefault(key(r), []).append(r)
    groups["all"] = chosen
    lines = ["| engine key | rows (bounds) | median abs error in sample | p90 | median abs error LOSO | p90 LOSO | "
             "inside (table from all rows) | inside (table without the source) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, members in sorted(groups.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        point = [r for r in members if _bound(r) is None]
        e_in = [abs(ins[r.row.id].error) for r in point if r.row.id in ins and ins[r.row.id].predicted is not None]
        e_lo = [abs(r.error) for r in point]
        inside_all = sum(judged_all[r.row.id][1] for r in members) / len(members)
        inside_lo = sum(judged_loso[r.row.id][1] for r in members) / len(members)
        lines.append(f"| {name} | {len(members)} ({len(members) - len(point)}) | "
                     f"{_pct(statistics.median(e_in)) if e_in else ''} | {_pct(p90(e_in)) if e_in else ''} | "
                     f"{_pct(statistics.median(e_lo)) if e_lo else ''} | {_pct(p90(e_lo)) if e_lo else ''} | "
                     f"{inside_all:.0%} | {inside_lo:.0%} |")
    return "\n".join(lines)
