"""The validation tests' access to the shared runner (benchmarks/validation/): the same rows, run through the same
command lines, as the benchmark scripts print them."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "benchmarks") not in sys.path:
    sys.path.insert(0, str(ROOT / "benchmarks"))

from validation import rows as _rows  # noqa: E402
from validation import runner, summary  # noqa: E402,F401

Row = _rows.Row


def load_benchmark(name: str):
    """A fresh module of `benchmarks/NAME.py`."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_rows(name: str) -> list:
    """The raw YAML of `tests/validation/NAME` (param_counts.yaml and other non-command tables)."""
    import yaml

    return yaml.safe_load((ROOT / "tests" / "validation" / name).read_text())


def rows(*names: str) -> list[Row]:
    """The command rows of the row files `names` (names or globs under tests/validation/)."""
    return _rows.load(_rows.files_named(*names))


def args(row: Row):
    """The row's command parsed by the CLI's own parser."""
    return runner._parse(row.command)


def predict(row: Row) -> runner.Prediction | None:
    return runner.predict(row)


def error(row: Row) -> float:
    return runner.predict(row).typical / row.value - 1


def command(text: str) -> Row:
    """A row made from a command line alone (value 1), to price a variant of a published row."""
    return Row(id="adhoc", file="", source="", role="check", command=text, metric="", value=1.0)


def json_of(row_or_command) -> dict:
    return runner.run_json(row_or_command if isinstance(row_or_command, str) else row_or_command.command)


def device(row: Row):
    from sizeup.hardware.catalog import load_catalog

    return load_catalog(include_user=False).device(args(row).device)
