import pytest

from tests.store.postgres_server import Cluster, fresh_database, server_url


@pytest.fixture
def pg_url():
    """A fresh PostgreSQL database on the test server (SIZEUP_TEST_DB_URL); skipped when none is given."""
    url = server_url()
    if url is None:
        pytest.skip("no PostgreSQL server given (SIZEUP_TEST_DB_URL); .ci/run starts one")
    pytest.importorskip("psycopg")
    with fresh_database(url) as db:
        yield db


@pytest.fixture(params=["sqlite", "postgres"])
def db(request, tmp_path):
    """The run store on each backend: a file path, or a fresh PostgreSQL database's URL."""
    if request.param == "sqlite":
        yield str(tmp_path / "runs.sqlite")
    else:
        yield request.getfixturevalue("pg_url")


@pytest.fixture
def cluster():
    """A private PostgreSQL cluster the test may stop and start; skipped without PostgreSQL's programs."""
    pytest.importorskip("psycopg")
    try:
        c = Cluster()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    try:
        c.start()
        yield c
    finally:
        c.remove()
