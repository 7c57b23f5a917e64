"""Hostile inputs of `sizeup load`, regenerated from a seed: URLs, prompts files and the answers of servers on
loopback (malformed HTTP, escapes in status lines and error events, streams that never end, answers that trickle,
odd JSON in events). Each server lives as long as the process that generated the cases (`close_servers`)."""

from __future__ import annotations

import gzip
import json
import random
import socket
import time
from pathlib import Path

from tests.fuzz.redteam.common import hostile_name, sane_json, write
from tests.fuzz.redteam.runner import Case
from tests.measure.stub_server import serve

_SERVERS: list = []

URLS = ["http://127.0.0.1:99999/v1/chat/completions", "http://127.0.0.1:0/", "http://127.0.0.1:-1/", "ftp://127.0.0.1/",
        "file:///etc/passwd", "http://", "http:///v1", "http://[::1/", "http://a b/", "http://x\r\nHost: evil/",
        "http://127.0.0.1:9/\r\nX: y", "javascript:alert(1)", "", "127.0.0.1:8000", "http://127.0.0.1:9/\x1b[2J",
        "http://" + "a" * 70 + ".example/", "http://" + "a" * 100_000, "http://127.0.0.1:9/" + "x" * 100_000,
        "http://user:pass@127.0.0.1:9/v1", "http://ü.invalid/v1", "http://127.0.0.1:9:9/", "http://0x7f.1:9/",
        "http://127.0.0.1:９/", "HTTP://127.0.0.1:9/v1"]


def _sse(*events: str | bytes, head: str = "HTTP/1.1 200 OK") -> bytes:
    body = b"".join(b"data: " + (e if isinstance(e, bytes) else e.encode()) + b"\n\n" for e in events)
    return (head + "\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n").encode() + body


def _token(content: object) -> str:
    return json.dumps({"choices": [{"delta": {"content": content}}]})


def _endless(sock: socket.socket) -> None:
    sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
    for _ in range(100_000):
        sock.sendall(f"data: {_token('x')}\n\n".encode())
        time.sleep(0.05)


def _trickle(sock: socket.socket) -> None:
    for byte in _sse(_token("hi"), "[DONE]"):
        sock.sendall(bytes([byte]))
        time.sleep(0.5)


def _silent(sock: socket.socket) -> None:
    time.sleep(60)


ANSWERS: dict[str, object] = {
    "escape-status": b"HTTP/1.1 500 \x1b[2J\rsizeup: error: forged\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    "escape-error-event": _sse(json.dumps({"error": {"message": "\x1b[2J\rsizeup: error: forged " + "<b>" * 3}})),
    "escape-content": _sse(_token("\x1b[2J\x07"), _token("\u202e"), "[DONE]"),
    "escape-body-503": b"HTTP/1.1 503 Busy\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n\x1b]0;t\x07\x9b31m",
    "garbage": b"garbage\r\n\r\n", "http-0.9": b"hello", "empty": b"",
    "status-999": b"HTTP/1.1 999 What\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    "length-negative": b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: -1\r\n\r\nx",
    "length-past-end": b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 99999999\r\n\r\ndata: x",
    "bad-chunk": b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nx\r\n",
    "huge-header": b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 2**20 + b"\r\nConnection: close\r\n\r\n",
    "many-headers": b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(20_000)) + b"\r\n",
    "gzip-bomb": b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\nConnection: close"
                 b"\r\n\r\n" + gzip.compress(b"\0" * 50_000_000),
    "nan-usage": _sse(_token("a"), json.dumps({"choices": [], "usage": {"completion_tokens": float("nan")}}), "[DONE]"),
    "negative-usage": _sse(_token("a"), json.dumps({"choices": [], "usage": {"completion_tokens": -5,
                                                                             "prompt_tokens": 10**30}}), "[DONE]"),
    "deep-json-event": _sse("[" * 100_000 + "]" * 100_000, "[DONE]"),
    "huge-event": _sse(_token("x" * 10_000_000), "[DONE]"),
    "content-not-text": _sse(_token(5), _token(["a"]), _token({"a": 1}), "[DONE]"),
    "choices-not-list": _sse(json.dumps({"choices": "abc"}), json.dumps({"choices": [5]}), "[DONE]"),
    "not-utf8": _sse(b'{"choices": [{"delta": {"content": "\xff\xfe"}}]}', "[DONE]"),
    "event-not-json": _sse("{not json", "[DONE]"),
    "redirect-loop": b"HTTP/1.1 307 Again\r\nLocation: /v1/chat/completions\r\nContent-Length: 0\r\n\r\n",
    "endless-stream": _endless, "trickle": _trickle, "silent": _silent,
}
PROMPTS = {
    "binary.txt": bytes(range(256)) * 64, "empty.txt": b"", "newlines.txt": b"\n" * 1000, "nul.txt": b"a\x00b\n",
    "utf16.txt": "hello\n".encode("utf-16"), "long-line.txt": b"x" * (8 * 2**20) + b"\n",
    "17MiB.txt": b"hello\n" * (3 * 2**20), "escapes.txt": "\x1b[2J hello\n\u202e bye\n".encode(),
    "bad.jsonl": b'{"prompt": 5}\n', "list.jsonl": b"[1, 2]\n", "nan.jsonl": b'{"prompt": NaN}\n',
    "deep.jsonl": b'{"prompt": ' + b"[" * 50_000 + b"]" * 50_000 + b"}\n", "no-prompt.jsonl": b'{"text": "hi"}\n',
    "mixed.jsonl": b'{"prompt": "a"}\nnot json\n', "many.jsonl": b'{"prompt": "a"}\n' * 200_000,
    "crlf.txt": b"a\r\nb\r\n", "latin1.txt": "caf\xe9\n".encode("latin-1"),
}


def load_cases(rng: random.Random, folder: Path) -> list[Case]:
    cases = []
    db = str(folder / "load.sqlite")
    run = ["--concurrency", "2", "--requests", "4", "--timeout", "3s", "--db", db]
    for url in URLS:
        cases.append(Case(f"url {url[:30]!r}x{len(url)}", "load", ["load", url, *run], expect="either"))
    for name, text in PROMPTS.items():
        path = write(folder / name, text)
        cases.append(Case(f"prompts {name}", "load", ["load", "http://127.0.0.1:9/v1/chat/completions", "--prompts",
                                                      str(path), *run]))
    for name, answer in ANSWERS.items():
        server = serve(answer)
        _SERVERS.append(server)
        url = f"http://127.0.0.1:{server.server_address[1]}/v1/chat/completions"
        api = rng.choice(["openai", "openai", "http"])
        argv = ["load", url, "--api", api, *run, *rng.choice([[], ["--json"]])]
        cases.append(Case(f"answer {name} ({api})", "load", argv, expect="either", check=sane_json))
    sla = write(folder / "sla.yaml", f"model: llama-3.2-1b\ntask: chat\nname: {json.dumps(hostile_name(rng))}\n"
                                     "traffic: {users: 1}\nsla: {ttft_p95_s: .nan}\n")
    cases.append(Case("sla hostile", "load", ["load", "http://127.0.0.1:9/v1", "--sla", str(sla), *run],
                      expect="refuse"))
    return cases


def close_servers() -> None:
    """Stop every server at once (each `shutdown` waits up to half a second for its loop)."""
    import threading

    stops = [threading.Thread(target=server.shutdown) for server in _SERVERS]
    for stop in stops:
        stop.start()
    for stop in stops:
        stop.join()
    while _SERVERS:
        _SERVERS.pop().server_close()
