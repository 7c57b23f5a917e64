"""Every file sizeup writes for a user (`plan --out` in each format, `--plots`, `--deploy`, `runs export --out`,
`sweep --out`) is opened without blocking: a FIFO that nothing reads is refused in one line at once (it hung the
process before), /dev/full is one line, and the sheet still reaches a FIFO that is read."""

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEC = "name: s\nimage: i\nqueue: q\nmeasure: {target: llama-3.2-1b}\npoints:\n- {device: h100}\n"


def sizeup(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sizeup", *argv], capture_output=True, text=True, timeout=60, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "SIZEUP_DATA_DIR": str(cwd)})


COMMANDS = {
    "plan-md": lambda p: ["plan", "llama-3.2-1b", "--format", "md", "--out", str(p)],
    "plan-xlsx": lambda p: ["plan", "llama-3.2-1b", "--format", "xlsx", "--out", str(p)],
    "sweep-k8s": lambda p: ["sweep", str(p.parent / "spec.yaml"), "--emit", "k8s", "--out", str(p)],
}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_fifo_nothing_reads_is_refused_at_once(tmp_path, name):
    (tmp_path / "spec.yaml").write_text(SPEC)
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    proc = sizeup(*COMMANDS[name](fifo), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1 and "is a FIFO or device that nothing reads" in proc.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_that_is_read_gets_the_sheet(tmp_path):
    fifo = tmp_path / "out.md"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    proc = sizeup(*COMMANDS["plan-md"](fifo), cwd=tmp_path)
    reader.join(10)
    assert proc.returncode == 0, proc.stderr
    assert got and got[0].startswith("# Compute requirement sheet")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_device_is_one_line_with_nothing_after_it(tmp_path):
    out = tmp_path / "sheet.xlsx"
    out.symlink_to("/dev/full")
    proc = sizeup(*COMMANDS["plan-xlsx"](out), cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.endswith("cannot write (No space left on device)\n") and proc.stderr.count("\n") == 1
