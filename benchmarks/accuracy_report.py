"""docs/ACCURACY.md from the validation data, by one command: per kind, engine and device class the rows, median and
p90 |error|, median bias and the share inside the range; tuned vs check vs leave-one-source-out; each fitted figure
without its sources; the range table's coverage and widths (benchmarks/validation/accuracy.py).

Takes a few minutes (leave-one-source-out bisects every tuned row through its command). --files limits it to some row
files (the test runs it on two small ones).
With --write (all rows) it also puts the headline table into README.md's Accuracy section.
Run from the repo root: python benchmarks/accuracy_report.py [--write docs/ACCURACY.md] [--files NAME ...]
"""

from __future__ import annotations

import argparse
import sys
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]

from validation import accuracy, loso, rows, summary  # noqa: E402

COMMAND = "python benchmarks/accuracy_report.py --write docs/ACCURACY.md"


def generate(files: list[str] | None = None, progress: bool = False) -> str:
    from fit_ranges import commit
    from sizeup.price.ranges_table import _table

    selected = rows.load(rows.files_named(*files) if files else None)
    fitted = loso.fit(selected, (lambda m: print(m, file=sys.stderr)) if progress else None)
    return accuracy.document(summary.evaluate(selected), loso.results(selected, fitted), fitted, _table(),
                             command=COMMAND if not files else f"{COMMAND} --files {' '.join(files)}",
                             commit=commit(), today=date.today().isoformat())


def headline_table(document: str) -> list[str]:
    """The lines of the document's headline table."""
    start = document.index("## Headline")
    return document[start:].split("\n\n")[1].splitlines()


def quote_in_readme(readme: str, table: list[str]) -> str:
    """README.md with the table of its '## Accuracy' section replaced by `table`."""
    start = readme.index("## Accuracy\n")
    lines = readme[start:].splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("| kind |"))
    last = first
    while last + 1 < len(lines) and lines[last + 1].startswith("|"):
        last += 1
    return readme[:start] + "\n".join(lines[:first] + table + lines[last + 1:]) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", metavar="PATH", help="write the document there (else print it)")
    p.add_argument("--files", nargs="+", metavar="NAME", help="only these row files (names or globs)")
    p.add_argument("--progress", action="store_true")
    args = p.parse_args()
    text = generate(args.files, args.progress)
    if args.write:
        Path(args.write).write_text(text)
        print(f"wrote {args.write}")
        if not args.files:  # README.md quotes the headline of the whole set
            readme = ROOT / "README.md"
            readme.write_text(quote_in_readme(readme.read_text(), headline_table(text)))
            print("updated the headline table in README.md")
    else:
        print(text)


if __name__ == "__main__":
    main()
