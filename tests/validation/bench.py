"""The validation tests' one way to load a `benchmarks/validate_*.py` script as a module (the scripts are
not a package): each test prices its rows with the same code the benchmark prints them with."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_benchmark(name: str):
    """A fresh module of `benchmarks/NAME.py`."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_rows(name: str) -> list:
    """The rows of `tests/validation/NAME` (a YAML list of published measurements)."""
    import yaml

    return yaml.safe_load((ROOT / "tests" / "validation" / name).read_text())
