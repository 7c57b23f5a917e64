"""The reference server under malformed HTTP, on loopback only: every case gets a 4xx (or is cut off in
bounded time), no crash, bounded memory, and the next request still works. Each case is a few requests and
finishes in seconds."""

import json
import socket
import threading
import time
import tracemalloc

import pytest

pytest.importorskip("torch")

from sizeup.errors import ConfigError  # noqa: E402
from sizeup.measure.serve import ServerLimits, serve  # noqa: E402

LIMITS = ServerLimits(request_timeout_s=1.0, idle_timeout_s=1.0, max_connections=8)


@pytest.fixture(scope="module")
def server():
    httpd = serve("llama-3.2-1b", port=0, tiny=True, limits=LIMITS)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def address(server):
    return server.server_address[:2]


def connect(address, timeout=5.0) -> socket.socket:
    sock = socket.create_connection(address, timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_response(sock: socket.socket) -> tuple[int, dict, bytes]:
    """(status, headers, body) of one response, read by Content-Length."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed after {data!r}")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return status, headers, rest[:length]


def closed_within(sock: socket.socket, seconds: float) -> float:
    """Seconds until the server closes the connection (reading and dropping whatever it sends)."""
    start = time.monotonic()
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass
    return time.monotonic() - start


def post(path: str, body: bytes, extra: str = "") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"{extra}\r\n").encode() + body


GOOD = json.dumps({"prompt": "hi", "max_tokens": 2}).encode()


def healthy(address) -> None:
    with connect(address) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        status, _, body = read_response(sock)
    assert status == 200 and json.loads(body)["status"] == "ok"


def test_binds_loopback_by_default_and_refuses_other_hosts(address):
    assert address[0] == "127.0.0.1"
    with pytest.raises(ConfigError, match="loopback interface only"):
        serve("llama-3.2-1b", host="0.0.0.0", port=0)


@pytest.mark.parametrize("garbage", [b"\x00\xff\xfe garbage\r\n\r\n", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" * 20,
                                     b"GET /health HTTP/9.9\r\n\r\n", b"POST\r\n\r\n", b"A" * 70000 + b"\r\n\r\n",
                                     b"GET /health HTTP/1.1\r\n" + b"X-A: b\r\n" * 150 + b"\r\n"],
                         ids=["binary", "tls-hello", "bad-version", "no-path", "long-line", "many-headers"])
def test_garbage_bytes_get_a_4xx_and_the_next_request_works(address, garbage):
    with connect(address) as sock:
        sock.sendall(garbage)
        try:
            status, _, _ = read_response(sock)
        except ConnectionError:
            status = None  # closed without an answer is allowed for bytes that are not HTTP at all
        assert status is None or 400 <= status < 500
    healthy(address)


def test_a_claimed_100_gb_body_is_413_at_once_and_the_connection_closed(address):
    with connect(address) as sock:
        start = time.monotonic()
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000000\r\n\r\n{")
        status, headers, body = read_response(sock)
        answered_s = time.monotonic() - start
        assert status == 413 and headers.get("connection") == "close" and b"over the" in body
        assert closed_within(sock, 5.0) < 3.0 and answered_s < 3.0  # not the time to send 100 GB
    healthy(address)


def test_a_10_mb_body_is_413_without_being_held_in_memory(address):
    body = b'{"prompt": "' + b"x" * (10 * 2**20) + b'"}'
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        baseline = tracemalloc.get_traced_memory()[0]
        with connect(address) as sock:
            sender = threading.Thread(target=lambda: _send_ignoring_reset(sock, post("/v1/completions", body)))
            sender.start()
            status, _, _ = read_response(sock)
            sender.join(timeout=10)
        peak = tracemalloc.get_traced_memory()[1] - baseline
    finally:
        tracemalloc.stop()
    assert status == 413
    assert peak < len(body) + 4 * 2**20  # the test's own 10 MB request, plus well under one more copy
    healthy(address)


def _send_ignoring_reset(sock: socket.socket, data: bytes) -> None:
    try:
        sock.sendall(data)
    except OSError:
        pass


@pytest.mark.parametrize("head", [b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n{",
                                  b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: "],
                         ids=["slow-body", "slow-headers"])
def test_a_slow_client_is_cut_off_at_the_request_deadline(address, head):
    with connect(address) as sock:
        sock.sendall(head)
        start = time.monotonic()
        try:
            for _ in range(40):  # one byte every 0.2 s: each read is quick, the request never completes
                time.sleep(0.2)
                sock.sendall(b"a")
        except OSError:
            pass
        cut_s = time.monotonic() - start + closed_within(sock, 5.0)
    assert cut_s < LIMITS.request_timeout_s + 2.0
    healthy(address)


def test_a_silent_client_is_closed_after_the_idle_timeout(address):
    with connect(address) as sock:
        assert closed_within(sock, 5.0) < LIMITS.idle_timeout_s + 1.5


@pytest.mark.parametrize("body, code", [(b"{not json", 400), (b"\xff\xfe{}", 400), (b"[" * 100_000, 400),
                                        (b"[1, 2]", 400), (b'{"max_tokens": "5"}', 400),
                                        (b'{"max_tokens": 1e400}', 400), (b'{"max_tokens": true}', 400),
                                        (b'{"max_tokens": 0}', 400), (b'{"prompt": 7}', 400),
                                        (b'{"prompt": "a", "stream": "yes"}', 400)])
def test_bad_json_is_400_and_the_kept_alive_connection_goes_on(address, body, code):
    with connect(address) as sock:
        sock.sendall(post("/v1/completions", body))
        status, _, answer = read_response(sock)
        assert status == code and json.loads(answer)["error"]["message"].startswith("bad request")
        sock.sendall(post("/v1/completions", GOOD))  # the same connection
        status, _, answer = read_response(sock)
        assert status == 200 and json.loads(answer)["choices"][0]["text"]


@pytest.mark.parametrize("headers, code", [("Content-Length: abc\r\n", 400), ("Content-Length: -5\r\n", 400),
                                           ("Content-Length: 5\r\nContent-Length: 6\r\n", 400),
                                           ("Transfer-Encoding: chunked\r\n", 411)])
def test_bad_framing_is_4xx_and_closes(address, headers, code):
    with connect(address) as sock:
        sock.sendall(f"POST /v1/completions HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode())
        status, answer_headers, _ = read_response(sock)
        assert status == code and answer_headers.get("connection") == "close"
        assert closed_within(sock, 5.0) < 2.0
    healthy(address)


def test_a_body_shorter_than_its_length_is_400(address):
    with connect(address) as sock:
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{}")
        sock.shutdown(socket.SHUT_WR)
        status, _, _ = read_response(sock)
    assert status == 400
    healthy(address)


def test_connections_past_the_limit_get_503_and_threads_stay_bounded():
    limits = ServerLimits(request_timeout_s=10.0, idle_timeout_s=3.0, max_connections=8)
    server = serve("llama-3.2-1b", port=0, tiny=True, limits=limits)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        _connection_limit(server, limits)
    finally:
        server.shutdown()
        server.server_close()


def _connection_limit(server, limits: ServerLimits) -> None:
    address = server.server_address[:2]
    idle = [connect(address) for _ in range(limits.max_connections)]
    try:
        deadline = time.monotonic() + 3
        while server.active_connections < limits.max_connections and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.active_connections == limits.max_connections
        with connect(address) as extra:
            status, _, _ = read_response(extra)
        assert status == 503 and server.active_connections == limits.max_connections
    finally:
        for sock in idle:
            sock.close()
    deadline = time.monotonic() + limits.idle_timeout_s + 3
    while server.active_connections and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.active_connections == 0  # every connection's thread has ended
    healthy(address)


def test_limits_are_checked():
    with pytest.raises(ConfigError, match="max_body_bytes 0"):
        ServerLimits(max_body_bytes=0)
    with pytest.raises(ConfigError, match="request_timeout_s inf"):
        ServerLimits(request_timeout_s=float("inf"))
