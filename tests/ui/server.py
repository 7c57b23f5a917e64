"""A real uvicorn server in a thread, for the tests that need HTTP over a socket (browser, timing)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(app, host: str = "127.0.0.1", port: int | None = None) -> Iterator[str]:
    """`app` served on http://host:port (a free port by default) while the block runs; yields the base URL."""
    import uvicorn

    port = port or free_port(host)
    srv = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="error"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://{host}:{port}"
    finally:
        srv.should_exit = True
        thread.join(10)
