"""Answerability of every validation row: does the command a user types from the source's conditions run and price?

Runs the command of every row of every tests/validation/*.yaml (a runner row's `command`, a gathered row's `argv`:
tests/validation/ROWS_README.md) through the validation runner (sizeup's own CLI, in process, with --json) and
prints, per file, the rows answered (the command ran and the row's metric has a figure), the rows refused (the
command's one-line error) and the rows that ran but gave no figure for the metric (e.g. compute unknown), with the
reasons grouped. Nothing is compared with the published values here: the validate_*.py scripts do that.
Run from the repo root: python benchmarks/answerable.py [FILE.yaml ...] [--rows]
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]

import yaml  # noqa: E402

from validation import runner  # noqa: E402
from validation.rows import ROW_DIR, Row  # noqa: E402


def raw_rows(path: Path) -> list[dict]:
    data = yaml.safe_load(path.read_text())
    rows = data.get("rows", []) if isinstance(data, dict) else (data or [])
    return [r for r in rows if isinstance(r, dict) and (r.get("command") or r.get("argv"))]


def verdict(raw: dict, file: str) -> tuple[str, str]:
    """('answered' | 'refused' | 'no figure', why) of one row."""
    command = " ".join(str(raw.get("command") or raw.get("argv")).split())
    row = Row(id=str(raw["id"]), file=file, source=str(raw.get("source_key") or raw.get("source")),
              role=str(raw.get("role")), command=command, metric=str(raw["metric"]), value=float(raw["value"]))
    argv = shlex.split(command)
    if argv[:1] != ["sizeup"]:
        return "refused", f"not a sizeup command: {command[:60]}"
    try:
        result = runner.run_json(command)
    except runner.RowError as e:
        return "refused", str(e).split(": ", 1)[-1]
    except Exception as e:  # a traceback is a bug, counted apart so that it is seen
        return "refused", f"CRASH {type(e).__name__}: {e}"
    try:
        metric = runner.metric_of(row)
        figure = metric.extract(result, row)
    except Exception as e:
        return "no figure", f"{type(e).__name__}: {e}"
    return ("answered", "") if figure is not None else ("no figure", f"{row.metric}: the estimate gives none")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="*", help="row files (default: every tests/validation/*.yaml with rows)")
    p.add_argument("--rows", action="store_true", help="print every refused row with its reason")
    args = p.parse_args()
    paths = [Path(f) if Path(f).exists() else ROW_DIR / f for f in args.files] or sorted(ROW_DIR.glob("*.yaml"))
    totals = Counter()
    print(f"{'file':<48} {'rows':>5} {'answered':>9} {'refused':>8} {'no fig':>7}")
    reasons: dict[str, Counter] = {}
    for path in paths:
        rows = raw_rows(path)
        if not rows:
            continue
        count = Counter()
        for raw in rows:
            kind, why = verdict(raw, path.name)
            count[kind] += 1
            if kind != "answered":
                reasons.setdefault(path.name, Counter())[f"{kind}: {why[:160]}"] += 1
                if args.rows:
                    print(f"  {path.name}: {raw['id']}: {kind}: {why}")
        totals.update(count)
        totals["rows"] += len(rows)
        print(f"{path.name:<48} {len(rows):>5} {count['answered']:>9} {count['refused']:>8} {count['no figure']:>7}")
    share = totals["answered"] / max(totals["rows"], 1)
    print(f"{'total':<48} {totals['rows']:>5} {totals['answered']:>9} {totals['refused']:>8} "
          f"{totals['no figure']:>7}   ({share:.1%} answered)")
    for name, why in reasons.items():
        print(f"\n{name}:")
        for text, n in why.most_common():
            print(f"  {n:>3} x {text}")


if __name__ == "__main__":
    main()
