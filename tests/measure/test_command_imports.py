"""The measurement commands start at Python's speed: importing a command module (to register its parser)
loads neither numpy, torch, rich nor sqlite3; those come when the command runs."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")
HEAVY = ("numpy", "torch", "rich", "sqlite3", "yaml", "httpx", "psutil")


@pytest.mark.parametrize("module", ["sizeup.cli.commands.measure", "sizeup.cli.commands.calibrate",
                                    "sizeup.cli.commands.compare", "sizeup.cli.commands.runs",
                                    "sizeup.cli.commands.load", "sizeup.cli.commands.watch",
                                    "sizeup.cli.calibration"])
def test_command_module_imports_nothing_heavy(module):
    code = (f"import argparse, sys, {module} as m\n"
            "if hasattr(m, 'register'):\n"
            "    m.register(argparse.ArgumentParser().add_subparsers())\n"
            f"print(','.join(n for n in {HEAVY!r} if n in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": SRC})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"{module} imports {out.stdout.strip()} at import time"
