"""The measurement commands start at Python's speed: importing a command module (to register its parser)
loads neither numpy, torch, rich nor sqlite3; those come when the command runs."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")
HEAVY = ("numpy", "torch", "rich", "sqlite3", "yaml", "httpx", "psutil", "psycopg", "sizeup.store", "mlflow")


@pytest.mark.parametrize("module", ["sizeup.cli.commands.measure", "sizeup.cli.commands.calibrate",
                                    "sizeup.cli.commands.compare", "sizeup.cli.commands.runs",
                                    "sizeup.cli.commands.load", "sizeup.cli.commands.watch",
                                    "sizeup.cli.calibration", "sizeup.cli.commands.sweep",
                                    "sizeup.cli.commands.runs_import", "sizeup.cli.commands.compare_serving",
                                    "sizeup.cli.db"])
def test_command_module_imports_nothing_heavy(module):
    code = (f"import argparse, sys, {module} as m\n"
            "if hasattr(m, 'register'):\n"
            "    m.register(argparse.ArgumentParser().add_subparsers())\n"
            f"print(','.join(n for n in {HEAVY!r} if n in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": SRC})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"{module} imports {out.stdout.strip()} at import time"


def test_estimate_never_loads_the_run_store_or_a_database_driver():
    """`sizeup estimate` (and its device table) start as before the store had a PostgreSQL backend: neither the
    store, nor sqlite3, nor psycopg is imported."""
    code = ("import sys\nfrom sizeup.cli.main import main\n"
            "main(['estimate', 'llama-3.1-8b', '--device', 'rtx-4090', '--json'])\n"
            "main(['estimate', 'llama-3.1-8b', '--json'])\n"
            "print(','.join(n for n in ('sizeup.store', 'sqlite3', 'psycopg', 'mlflow') if n in sys.modules), "
            "file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": SRC})
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip().splitlines()[-1:] in ([], [""]), f"estimate imports {out.stderr.strip()}"
