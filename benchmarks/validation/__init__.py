"""The one validation runner every `benchmarks/validate_*.py` script, `benchmarks/fit_ranges.py` and
`benchmarks/accuracy_report.py` use: rows (`rows.py`) are command lines run through sizeup's own CLI in this
process (`runner.py`), fitted tables are refit without one source at a time (`tables.py`, `loso.py`), and errors are
summarised one way (`summary.py`). Not part of the installed package: it reads tests/validation/."""
