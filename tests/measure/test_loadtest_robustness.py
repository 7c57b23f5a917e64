"""The load test against servers that answer malformed HTTP, on loopback: every request is counted by what went
wrong, nothing raises, the run ends on time, and memory stays bounded whatever the server sends."""

import socket
import threading
import time
import tracemalloc

import pytest

pytest.importorskip("httpx")

from sizeup.measure.loadtest import MAX_LINE_BYTES, LoadConfig, run_load  # noqa: E402
from tests.measure.stub_server import serve  # noqa: E402

SSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
ANSWERS = {
    "garbage": b"\x00\xff\xfe this is not HTTP\r\n\r\n",
    "huge-content-length": b"HTTP/1.1 200 OK\r\nContent-Length: 100000000000\r\n\r\ndata: {}\n",
    "bad-json": SSE + b"data: {not json\n\n",
    "list-chunk": SSE + b"data: [1, 2]\n\n",
    "choices-not-a-list": SSE + b'data: {"choices": "abc"}\n\n',
    "token-not-a-string": SSE + b'data: {"choices": [{"delta": {"content": 5}}]}\n\n',
    "huge-line": SSE + b"data: " + b"x" * (3 * MAX_LINE_BYTES),
}


def _trickle(sock) -> None:
    sock.sendall(SSE)
    for _ in range(100):
        sock.sendall(b"d")
        time.sleep(0.1)


def serve_raw(mode: str):
    return serve(_trickle if mode == "trickle" else ANSWERS[mode])


@pytest.mark.parametrize("mode, statuses", [("garbage", {"protocol"}), ("huge-content-length", {"protocol"}),
                                            ("bad-json", {"protocol"}), ("list-chunk", {"protocol"}),
                                            ("choices-not-a-list", {"protocol"}),
                                            ("token-not-a-string", {"protocol"}), ("huge-line", {"protocol"}),
                                            ("trickle", {"timeout"})])
def test_malformed_answers_are_counted_and_the_run_ends(mode, statuses):
    server = serve_raw(mode)
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/chat/completions"
    tracemalloc.start()
    try:
        start = time.perf_counter()
        result = run_load(LoadConfig(url=url, concurrency=2, requests=4, duration_s=None, timeout_s=1.0))
        elapsed = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        server.shutdown()
        server.server_close()
    data = result.to_dict()
    assert data["requests"] == 4 and data["ok"] == 0 and set(data["errors"]) == statuses
    assert elapsed < 8
    assert peak < 4 * MAX_LINE_BYTES + 8 * 2**20  # a line is cut at MAX_LINE_BYTES, however long the server's


def test_plain_http_bodies_are_discarded_not_held():
    server = serve_raw("huge-line")
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        result = run_load(LoadConfig(url=url, api="http", concurrency=1, requests=2, duration_s=None, timeout_s=2.0))
    finally:
        server.shutdown()
        server.server_close()
    assert result.to_dict()["ok"] == 2


def test_a_server_that_closes_at_once_is_a_protocol_error():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)

    def accept_and_close() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.close()

    threading.Thread(target=accept_and_close, daemon=True).start()
    try:
        result = run_load(LoadConfig(url=f"http://127.0.0.1:{listener.getsockname()[1]}/v1/chat/completions",
                                     concurrency=1, requests=3, duration_s=None, timeout_s=1.0))
    finally:
        listener.close()
    assert result.to_dict()["errors"] == {"protocol": 3}
