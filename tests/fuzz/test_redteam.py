"""Issue 27's bar, held by a regenerated set of hostile inputs: every case refused in one line (naming the value
where the case says which) or handled correctly, within 30 s, no traceback, no "bug in sizeup" line, no raw control
character in what is printed or written, no formula cell, no raw tag, no command run, no hang.

The cases come from `tests/fuzz/redteam/` (one generator per class of the issue: GGUF, safetensors, ONNX, config.json,
catalog and scenario YAML, flags, paths that are not regular files, run stores, sweep specs, `sizeup load`'s URLs,
prompts and server answers, files rewritten while read). Each run draws a sample of every generator's cases from a
seed: `SIZEUP_REDTEAM_SEED` (default 27) picks a different set, `SIZEUP_REDTEAM_SCALE` multiplies the sample
(`SIZEUP_REDTEAM_SCALE=100` runs every case, several minutes); `python -m tests.fuzz.redteam.explore SEED` prints
the whole table. Cases run in process (`sizeup.cli.main.main`, streams captured, SIGALRM past 30 s); those that could
block a process (FIFOs, devices, servers, watches) in a fresh `python -m sizeup` with a timeout."""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.fuzz.redteam.generate import GENERATORS
from tests.fuzz.redteam.runner import judge, run

SEED = int(os.environ.get("SIZEUP_REDTEAM_SEED", "27"))
SCALE = float(os.environ.get("SIZEUP_REDTEAM_SCALE", "1"))
SAMPLE = {"gguf": 30, "safetensors": 15, "onnx": 10, "config": 30, "catalog": 30, "scenario": 20, "flags": 40,
          "paths": 10, "store": 25, "sweep": 12, "load": 12, "misc": 8, "changing": 2}
"""Cases drawn per generator (about 250 of the ~1,000): under a minute in all on two busy cores."""
KNOWN: dict = {}
"""Failures left in code other helpers own: expected to fail until fixed there; a pass is reported as XPASS."""
SLOW = ("reverse-20000", "forward-20000", "endless", "trickle", "silent", "monthly_usd")
"""Cases that take seconds each (a 20,000-node graph, a server that never ends an answer, a plan's wide search):
drawn only when the scale asks for every case."""

_generated: dict[str, list] = {}
_folder = Path(tempfile.mkdtemp(prefix="sizeup-redteam-"))


def _cases(name: str) -> list:
    if name not in _generated:
        where = _folder / name
        where.mkdir(parents=True, exist_ok=True)
        cases = GENERATORS[name](random.Random(f"{SEED}:{name}"), where)
        count = min(len(cases), max(1, round(SAMPLE[name] * SCALE)))
        if count < len(cases):
            cases = [c for c in cases if not any(s in c.id for s in SLOW)]
            cases = random.Random(f"{SEED}:{name}:sample").sample(cases, min(count, len(cases)))
        _generated[name] = cases
    return _generated[name]


def _slots() -> list[tuple[str, int]]:
    return [(name, i) for name in GENERATORS for i in range(max(1, round(SAMPLE[name] * SCALE)))]


@pytest.fixture(scope="module", autouse=True)
def _clean_up():
    yield
    from tests.fuzz.redteam.load_cases import close_servers

    close_servers()
    shutil.rmtree(_folder, ignore_errors=True)


@pytest.mark.parametrize("name, index", _slots(), ids=lambda v: str(v))
def test_a_hostile_input_is_refused_in_one_line_or_handled(name: str, index: int):
    cases = _cases(name)
    if index >= len(cases):
        pytest.skip(f"{name} has {len(cases)} cases")
    case = cases[index]
    verdict = judge(case, run(case, _folder / name))
    known = next((why for why, matches in KNOWN.items() if matches(case)), None)
    if known and verdict.startswith("FAIL"):
        pytest.xfail(f"known, outside the hardened readers: {known}")
    assert not verdict.startswith("FAIL"), f"{case} (seed {SEED}): {verdict}\n  sizeup {case.argv!r:.600}"

