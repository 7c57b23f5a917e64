import os
import tempfile

import pytest


def pytest_configure(config):
    """Every cache a test run fills (catalog, data files, traces) lives in a temporary folder of its own,
    never in the user's ~/.cache/sizeup; subprocesses inherit it."""
    if "SIZEUP_CACHE_DIR" not in os.environ:
        os.environ["SIZEUP_CACHE_DIR"] = tempfile.mkdtemp(prefix="sizeup-test-cache-")
    # a developer's shared run store, spool or host name never receives a test's runs: the store tests name
    # their database themselves (SIZEUP_TEST_DB_URL for PostgreSQL)
    for name in ("SIZEUP_DB", "SIZEUP_SPOOL", "SIZEUP_HOST"):
        os.environ.pop(name, None)


@pytest.fixture(scope="session")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture
def cli_json(capsys):
    """Run `sizeup ARGV` in-process and return the one JSON object it printed (asserting it exited 0)."""
    import json

    from sizeup.cli.main import main

    def run(argv):
        code = main(list(argv))
        captured = capsys.readouterr()
        assert code == 0, captured.err
        return json.loads(captured.out)

    return run
