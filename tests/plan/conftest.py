import pytest


@pytest.fixture(autouse=True)
def _trace_cache_in_a_temporary_folder(tmp_path_factory, monkeypatch):
    """Plans that trace a torch model (vision) keep their trace cache out of the user's cache folder."""
    monkeypatch.setenv("SIZEUP_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "sizeup-cache"))
    monkeypatch.delenv("SIZEUP_NO_CACHE", raising=False)
