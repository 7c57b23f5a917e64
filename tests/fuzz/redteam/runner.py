"""Running one hostile case through the CLI as a user would, and judging what came back (issue 27's bar).

A case is a command line (with the files it names already written), what it should end as — refused, handled, or
either — and, for a refusal, the words it must hold. `judge` classifies the result:

- `refused`: exit 1, stderr exactly one line `sizeup: error: …`, holding the case's words;
- `handled`: exit 0 (or 2 from `plan`: no configuration meets the targets; from `estimate`, `train`: does not fit), any
  output clean;
- `FAIL …`: a traceback, a "bug in sizeup" line, a hang past the limit, a multi-line error, a raw control
  character in stdout, stderr or a written file, a formula cell, a raw tag, an accepted case that must be refused.

`run_in_process` calls `sizeup.cli.main.main` with captured streams, its environment and working folder set for
the case (SIGALRM ends a case past the limit); `run_in_subprocess` starts `python -m sizeup`, for what could block
the whole process (FIFOs, devices, servers)."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

SECONDS = 30.0
ROOT = Path(__file__).resolve().parents[3]
MARK = "<script>alert(1)</script>"
"""The tag every hostile name carries: it must never come out raw in Markdown, HTML or SVG."""

RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""Control characters (newline and tab excepted), C1, line separators and bidi overrides."""
FORMULA = ("=", "+", "-", "@")


@dataclass
class Case:
    id: str
    cls: str
    """The issue's class of bad input: gguf, safetensors, onnx, config, catalog, scenario, yaml11, duplicates,
    unknown-names, numbers, flags, escapes, paths, truncated, nested, quadratic, load, store."""
    argv: list[str]
    expect: str = "either"
    """refuse | handle | either"""
    says: str | None = None
    """Words the one-line refusal must hold (the value or the field it names)."""
    env: dict[str, str] = field(default_factory=dict)
    outputs: list[Path] = field(default_factory=list)
    """Files the command writes, each checked for injection by its suffix."""
    fresh: bool = False
    """Run in a fresh process (it could block or need a server)."""
    check: Callable[[Result], str | None] | None = None
    """A further check of a handled case: a failure reason, or None."""
    background: list[str] | None = None
    """A process that runs for the case's whole run (a writer that rewrites the file being read)."""

    def __str__(self) -> str:
        return f"{self.cls}/{self.id}"


@dataclass
class Result:
    code: int | None
    """None when it ran past the limit."""
    out: str
    err: str
    seconds: float


class _Timeout(BaseException):
    pass


@contextlib.contextmanager
def _environment(env: dict[str, str], cwd: Path) -> Iterator[None]:
    saved, here = dict(os.environ), os.getcwd()
    os.environ.update(env)
    for key in [k for k, v in env.items() if v == ""]:
        os.environ.pop(key)
    os.chdir(cwd)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
        os.chdir(here)


def base_env(folder: Path) -> dict[str, str]:
    """A case's own data and cache folders; no SIZEUP_DB or debug from the caller."""
    return {"SIZEUP_DATA_DIR": str(folder / "data"), "SIZEUP_CACHE_DIR": str(folder / "cache"),
            "SIZEUP_DB": "", "SIZEUP_DEBUG": "", "SIZEUP_SPOOL": "", "MLFLOW_TRACKING_URI": ""}


def run_in_process(case: Case, folder: Path, seconds: float = SECONDS) -> Result:
    from sizeup.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    fired: list[bool] = []

    def alarm(signum, frame):
        fired.append(True)
        raise _Timeout(f"past {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    start = time.perf_counter()
    try:
        with _environment({**base_env(folder), **case.env}, folder), contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            code = main(list(case.argv))
    except _Timeout:
        code = None
    except SystemExit as e:  # --help
        code = e.code if isinstance(e.code, int) else 1
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return Result(None if fired else code, out.getvalue(), err.getvalue(), time.perf_counter() - start)


def run_in_subprocess(case: Case, folder: Path, seconds: float = SECONDS) -> Result:
    env = {**os.environ, **base_env(folder), **case.env, "PYTHONPATH": str(ROOT / "src")}
    for key in [k for k, v in env.items() if v == ""]:
        env.pop(key)
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "sizeup", *case.argv], capture_output=True, timeout=seconds,
                              cwd=folder, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        return Result(None, (e.stdout or b"").decode(errors="replace"), (e.stderr or b"").decode(errors="replace"),
                      time.perf_counter() - start)
    return Result(proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"),
                  time.perf_counter() - start)


def run(case: Case, folder: Path, seconds: float = SECONDS) -> Result:
    helper = subprocess.Popen(case.background, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) \
        if case.background else None
    try:
        if helper is not None:
            time.sleep(0.3)
        return (run_in_subprocess if case.fresh else run_in_process)(case, folder, seconds)
    finally:
        if helper is not None:
            helper.kill()
            helper.wait()


# ---- judging ------------------------------------------------------------------------------------------------------

def _file_problem(path: Path) -> str | None:
    """What is wrong with a file (or any file in a folder) a command wrote from hostile names, or None."""
    if path.is_dir():
        return next((p for p in map(_file_problem, sorted(path.rglob("*"))) if p), None)
    if not path.exists() or not path.is_file():
        return None
    suffix = path.suffix.lower()
    if suffix == ".xlsx":
        return _xlsx_problem(path)
    text = path.read_text(errors="replace")
    if suffix in (".md", ".html", ".svg", ".htm") and MARK in text:
        return f"{path.name}: a raw {MARK!r}"
    if suffix in (".md", ".html", ".svg", ".txt", ".csv", ".yaml", ".sh", ".json") and RAW_CONTROL.search(text):
        return f"{path.name}: a raw control character {RAW_CONTROL.search(text).group()!r}"
    if suffix == ".csv":
        for row in csv.reader(io.StringIO(text)):
            for cell in row:
                if cell.startswith(FORMULA) and not _number(cell):
                    return f"{path.name}: cell {cell[:40]!r} starts a formula"
    if suffix == ".json":
        try:
            json.loads(text)
        except ValueError as e:
            return f"{path.name}: not JSON ({e})"
    return None


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _xlsx_problem(path: Path) -> str | None:
    try:
        with zipfile.ZipFile(path) as z:
            xml = "".join(z.read(n).decode(errors="replace") for n in z.namelist() if n.endswith(".xml"))
    except zipfile.BadZipFile as e:
        return f"{path.name}: not an xlsx ({e})"
    for formula in re.findall(r"<f>([^<]*)</f>", xml):
        if "HYPERLINK" in formula or "cmd" in formula.lower() or "alert" in formula:
            return f"{path.name}: formula {formula[:60]!r} from a name"
    return None


def judge(case: Case, result: Result) -> str:
    """'refused', 'handled' or 'FAIL <why>'."""
    if result.code is None:
        return f"FAIL hang (past {SECONDS:.0f} s)"
    both = result.out + result.err
    if "Traceback (most recent call last)" in both:
        return "FAIL traceback"
    if "bug in sizeup" in both:
        return "FAIL bug line: " + next(line for line in result.err.splitlines() if "bug in sizeup" in line)[:300]
    if result.seconds > SECONDS:
        return f"FAIL slow ({result.seconds:.0f} s)"
    raw = RAW_CONTROL.search(both)
    if raw:
        return f"FAIL raw control character {raw.group()!r} in the output"
    if result.code == 1:
        lines = result.err.splitlines()
        errors = [line for line in lines if line.startswith("sizeup: error: ")]
        if len(errors) != 1 or lines[-1] != errors[0]:
            return f"FAIL exit 1 without one error line: {result.err[-300:]!r}"
        if case.expect == "handle":
            return f"FAIL refused a sound input: {errors[0][:300]}"
        if case.says and case.says not in errors[0]:
            return f"FAIL refusal does not say {case.says!r}: {errors[0][:300]}"
        return "refused"
    if result.code not in (0, 2):
        return f"FAIL exit {result.code}: {result.err[-300:]!r}"
    if result.code == 2 and case.argv[0] not in ("plan", "estimate", "train"):  # no plan meets them; does not fit
        return f"FAIL exit 2 from {case.argv[0]}"
    if case.expect == "refuse":
        return f"FAIL accepted (exit {result.code}): {result.out[:200]!r}"
    for path in case.outputs:
        problem = _file_problem(path)
        if problem:
            return "FAIL " + problem
    if case.check is not None:
        problem = case.check(result)
        if problem:
            return "FAIL " + problem
    return "handled"
