"""Every hostile input of `hostile_cases` (GGUF and safetensors headers, config.json fields, catalog values) is
refused twice over: by the library, with the case's error class and words, and by the CLI a user would type,
exit code 1 with one line on stderr that holds the same words, no traceback, no "bug in sizeup", in under
30 s. Paths that are not regular files (a FIFO, a link to /dev/zero, a folder) are run in a fresh process with a
timeout, so that a reader that blocks fails the test instead of hanging it."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sizeup.cli.main import main
from tests.fuzz.hostile_cases import ALL_CASES, Case

SECONDS = 30.0
ROOT = Path(__file__).resolve().parents[2]


def run_cli(argv: list[str]) -> tuple[int, str, float]:
    err = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, err.getvalue(), time.perf_counter() - start


def assert_one_line_refusal(code: int, err: str, seconds: float, says: str) -> None:
    assert code == 1, err
    assert err.count("\n") == 1 and err.startswith("sizeup: error: "), err
    assert "Traceback" not in err and "bug in sizeup" not in err, err
    assert says in err, err
    assert seconds < SECONDS, f"{seconds:.1f} s"


@pytest.mark.parametrize("case", ALL_CASES, ids=str)
def test_the_library_refuses_in_one_line_naming_the_value(tmp_path: Path, case: Case):
    case.write(tmp_path)
    with pytest.raises(case.error) as info:
        case.read(tmp_path)
    message = str(info.value)
    assert "\n" not in message and case.says in message, message


@pytest.mark.parametrize("case", ALL_CASES, ids=str)
def test_the_cli_refuses_in_one_line_naming_the_value(tmp_path: Path, case: Case, monkeypatch):
    monkeypatch.setenv("SIZEUP_NO_CACHE", "1")
    argv = case.write(tmp_path)
    assert_one_line_refusal(*run_cli(argv), case.says)


# ---- paths that are not regular files -----------------------------------------------------------------------------

def _not_a_file(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "folder":
        path.mkdir()


COMMANDS = {  # how a path of each role is handed to sizeup, and the file name it has
    "config": ("config.json", lambda p: ["estimate", str(p), "--device", "rtx-4090"]),
    "gguf": ("m.gguf", lambda p: ["estimate", str(p), "--device", "rtx-4090"]),
    "safetensors": ("model.safetensors", lambda p: ["estimate", str(p), "--device", "rtx-4090"]),
    "onnx": ("m.onnx", lambda p: ["estimate", str(p), "--device", "rtx-4090"]),
    "scenario": ("s.yaml", lambda p: ["plan", str(p)]),
    "catalog-device": ("dev.yaml", lambda p: ["hw", "list", "--catalog", str(p.parent)]),
    "catalog-architectures": ("architectures.yaml", lambda p: ["hw", "list", "--catalog", str(p.parent)]),
}
SAYS = {"fifo": "is not a regular file (a FIFO)", "dev-zero": "is not a regular file (a character device)",
        "folder": "is not a regular file (a folder)"}


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not Path("/dev/zero").exists(), reason="needs FIFOs and /dev/zero")
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "folder"])
@pytest.mark.parametrize("role", list(COMMANDS))
def test_a_path_that_is_not_a_regular_file_is_refused_without_waiting(tmp_path: Path, role: str, kind: str):
    name, command = COMMANDS[role]
    folder = tmp_path / "in"
    folder.mkdir()
    path = folder / name
    _not_a_file(path, kind)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "sizeup", *command(path)], capture_output=True, text=True,
                          timeout=SECONDS, cwd=ROOT,
                          env={**os.environ, "SIZEUP_NO_CACHE": "1", "PYTHONPATH": str(ROOT / "src")})
    says = "has no config.json" if kind == "folder" and role in ("config", "gguf", "safetensors") else SAYS[kind]
    assert_one_line_refusal(proc.returncode, proc.stderr, time.perf_counter() - start, says)
