import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.load import load_model


@pytest.fixture(autouse=True)
def _trace_cache_in_a_temporary_folder(tmp_path_factory, monkeypatch):
    """Plans that trace a torch model (vision) keep their trace cache out of the user's cache folder."""
    monkeypatch.setenv("SIZEUP_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "sizeup-cache"))
    monkeypatch.delenv("SIZEUP_NO_CACHE", raising=False)


@pytest.fixture(scope="module")
def h100():
    """The H100 the capacity, output-reserve and tower plan tests price on."""
    return load_catalog().device("h100")


@pytest.fixture(scope="module")
def llama8b():
    return load_model("llama-3.1-8b")
