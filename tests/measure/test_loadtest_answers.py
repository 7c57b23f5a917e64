"""A request is ok only when it got what the protocol promises (issue 27.6): against stub servers on loopback
that answer a streamed chat request with a plain JSON 200, an HTML login page, a redirect, a stream with no
token, a stream cut before [DONE] or an error event, each request is an error with its reason, counted per
reason; a real stream is ok."""

import json

import pytest

pytest.importorskip("httpx")

from sizeup.cli.main import main  # noqa: E402
from sizeup.measure.loadtest import ERROR_REASONS, LoadConfig, describe_error, run_load  # noqa: E402
from tests.measure.stub_server import serve  # noqa: E402


def _http(status: str, ctype: str | None, body: bytes, extra: str = "") -> bytes:
    head = f"HTTP/1.1 {status}\r\n" + (f"Content-Type: {ctype}\r\n" if ctype else "") + extra
    return (head + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


def _sse(*events: str) -> bytes:
    body = "".join(f"data: {e}\n\n" for e in events).encode()
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nConnection: close\r\n\r\n" + body


TOKEN = json.dumps({"choices": [{"delta": {"content": "hi"}}]})
ANSWERS = {
    "stream": _sse(TOKEN, TOKEN, TOKEN, "[DONE]"),
    "json-200": _http("200 OK", "application/json",
                      json.dumps({"choices": [{"message": {"role": "assistant", "content": "hello"}}]}).encode()),
    "html-login": _http("200 OK", "text/html; charset=utf-8", b"<html><form action=/login>Sign in</form></html>"),
    "redirect": _http("302 Found", "text/html", b"<a href=/login>moved</a>", "Location: /login\r\n"),
    "plain-text": _http("200 OK", "text/plain", b"hello"),
    "no-type": _http("200 OK", None, b"hello"),
    "done-only": _sse("[DONE]"),
    "cut-short": _sse(TOKEN, TOKEN),
    "empty-deltas": _sse(json.dumps({"choices": [{"delta": {}}]}), "[DONE]"),
    "error-event": _sse(json.dumps({"error": {"message": "overloaded"}})),
    "http-503": _http("503 Service Unavailable", "text/plain", b"busy"),
}


@pytest.fixture
def stub():
    servers = []

    def start(mode: str) -> str:
        servers.append(serve(ANSWERS[mode]))
        return f"http://127.0.0.1:{servers[-1].server_address[1]}/v1/chat/completions"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def load(url: str, api: str = "openai") -> dict:
    return run_load(LoadConfig(url=url, api=api, concurrency=2, requests=4, duration_s=None, timeout_s=3.0)).to_dict()


@pytest.mark.parametrize("mode, reason", [
    ("json-200", "not_streamed"), ("html-login", "html_page"), ("redirect", "redirect_302"),
    ("plain-text", "not_event_stream"), ("no-type", "not_event_stream"), ("done-only", "no_tokens"),
    ("cut-short", "truncated"), ("empty-deltas", "no_tokens"), ("error-event", "stream_error"),
    ("http-503", "http_503"),
])
def test_answers_without_the_promised_tokens_are_errors_by_reason(stub, mode, reason):
    data = load(stub(mode))
    assert data["ok"] == 0 and data["errors"] == {reason: 4}
    assert data["error_reasons"] == {reason: describe_error(reason)}
    assert data["ttft_s"] == {} and data["token_throughput_per_s"] == 0


def test_a_real_stream_is_ok(stub):
    data = load(stub("stream"))
    assert data["ok"] == 4 and data["errors"] == {} and data["token_throughput_per_s"] > 0


@pytest.mark.parametrize("mode, expected", [("redirect", {"redirect_302": 4}), ("http-503", {"http_503": 4}),
                                            ("html-login", {})])
def test_plain_http_counts_2xx_only(stub, mode, expected):
    data = load(stub(mode), api="http")
    assert data["errors"] == expected and data["ok"] == 4 - sum(expected.values())


def test_every_reason_is_described():
    assert describe_error("redirect_301") == "a 301 redirect (not followed: give the endpoint's own URL)"
    assert describe_error("http_429") == "HTTP 429 from the server"
    assert all(describe_error(k) == v for k, v in ERROR_REASONS.items())


def test_the_cli_reports_errors_per_reason(stub, tmp_path, capsys):
    url = stub("json-200")
    assert main(["load", url, "--concurrency", "1", "--requests", "3", "--db", str(tmp_path / "r.db")]) == 0
    out = capsys.readouterr().out
    assert "3 requests, 0 ok" in out
    assert ("error not_streamed: 3 requests — a plain JSON answer where a token stream was asked (the server ignored "
            "stream: true)") in out
