import os
import tempfile

import pytest


def pytest_configure(config):
    """Every cache a test run fills (catalog, data files, traces) lives in a temporary folder of its own,
    never in the user's ~/.cache/sizeup; subprocesses inherit it."""
    if "SIZEUP_CACHE_DIR" not in os.environ:
        os.environ["SIZEUP_CACHE_DIR"] = tempfile.mkdtemp(prefix="sizeup-test-cache-")


@pytest.fixture(scope="session")
def torch():
    return pytest.importorskip("torch")
