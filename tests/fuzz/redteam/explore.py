"""Run every generated case and print the failures and a table: `python -m tests.fuzz.redteam.explore SEED [CLASS…]`."""

from __future__ import annotations

import collections
import sys
import tempfile
import time
from pathlib import Path

from tests.fuzz.redteam.generate import generate
from tests.fuzz.redteam.runner import judge, run


def main(argv: list[str]) -> int:
    seed = int(argv[0]) if argv else 0
    only = {a for a in argv[1:] if not a.startswith("-")}
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    with tempfile.TemporaryDirectory() as tmp:
        for case, folder in generate(seed, Path(tmp), only):
            t0 = time.perf_counter()
            result = run(case, folder)
            verdict = judge(case, result)
            kind = verdict.split()[0]
            table[case.cls][kind] += 1
            if kind == "FAIL" or "-v" in argv:
                print(f"{case}  [{time.perf_counter() - t0:.1f}s]  {verdict}\n    argv: {case.argv!r:.400}", flush=True)
                if "-vv" in argv:
                    print("    err: " + result.err.strip()[-400:].replace("\n", "\n         "))
    print(f"\n{'class':14} {'cases':>6} {'refused':>8} {'handled':>8} {'FAIL':>6}")
    for cls, counts in sorted(table.items()):
        print(f"{cls:14} {sum(counts.values()):6} {counts['refused']:8} {counts['handled']:8} {counts['FAIL']:6}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
