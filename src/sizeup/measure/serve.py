"""A small OpenAI-compatible server for tests and demos: a randomly initialised decoder from a preset
(or a tiny one of the same family) generating token by token on the CPU, streamed as server-sent
events. Standard library only (http.server), bound to 127.0.0.1 by default.

Endpoints: POST /v1/chat/completions and /v1/completions (`stream`, `max_tokens`), GET /health.

Malformed HTTP gets a 4xx and the server goes on: a request body is read only up to `ServerLimits.max_body_bytes`
(1 MiB; more is 413 before a byte of it is read, so a request claiming 100 GB costs nothing), a request must
arrive whole within `request_timeout_s` (a client that trickles bytes is cut off there: the socket's timeout is
set to what is left of that deadline before every read), a silent connection is closed after `idle_timeout_s`,
and at most `max_connections` are served at once (503 past that), which bounds threads and memory.
"""

from __future__ import annotations

import io
import json
import socket
import threading
import time
import uuid
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import torch

from sizeup.errors import ConfigError
from sizeup.ingest.hf_config import AttentionSpec, LayerSpec, MLPSpec, ModelArch, load_model
from sizeup.measure.llm import Decoder
from sizeup.units import MIB

__all__ = ["tiny_arch", "ModelServer", "ServerLimits", "serve"]

MAX_TOKENS_LIMIT = 4096


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerLimits:
    """What one client may cost the reference server."""

    max_body_bytes: int = MIB
    """A request body longer than this is answered 413 without being read."""
    drain_bytes: int = 16 * MIB
    """After a 413, a body up to this size is read and discarded (so the client, still sending, gets the
    answer rather than a reset); a longer one is not, and the connection is closed."""
    request_timeout_s: float = 30.0
    """The request line, headers and body must all arrive within this time."""
    idle_timeout_s: float = 10.0
    """The longest wait on one read or write of the socket (and for a kept-alive connection's next request)."""
    max_connections: int = 128
    """Connections served at once; one more is answered 503 and closed."""

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "drain_bytes", "max_connections"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"server limit {name} {value!r}: expected a positive integer")
        for name in ("request_timeout_s", "idle_timeout_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
                raise ConfigError(f"server limit {name} {value!r}: expected a positive number of seconds")


class _DeadlineReader(io.RawIOBase):
    """The socket's receiving side, with the timeout of every read set to what is left of the request's
    deadline (and at most the idle timeout): a client cannot hold the connection by sending slowly."""

    def __init__(self, sock: socket.socket, idle_timeout_s: float) -> None:
        self._sock = sock
        self._idle_s = idle_timeout_s
        self.deadline: float | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        timeout = self._idle_s
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request did not arrive in time")
            timeout = min(timeout, left)
        self._sock.settimeout(timeout)
        return self._sock.recv_into(buffer)


class BadRequest(Exception):
    """A request the server answers with a 4xx status; `code` and a one-line message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _request_fields(body: object, chat: bool) -> tuple[str, int, bool]:
    """(prompt, max_tokens, stream) from a decoded request body, each checked for its type."""
    if not isinstance(body, dict):
        raise BadRequest(400, f"the body is a JSON {type(body).__name__}, expected an object")
    max_tokens = body.get("max_tokens", 16)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 1 <= max_tokens <= MAX_TOKENS_LIMIT:
        raise BadRequest(400, f"max_tokens {str(max_tokens)[:40]!r}: expected an integer 1..{MAX_TOKENS_LIMIT}")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise BadRequest(400, f"stream {str(stream)[:40]!r}: expected true or false")
    if not chat:
        prompt = body.get("prompt", "")
        if not isinstance(prompt, str):
            raise BadRequest(400, "prompt: expected a string")
        return prompt, max_tokens, stream
    messages = body.get("messages", [])
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise BadRequest(400, "messages: expected a list of objects")
    contents = [m.get("content", "") for m in messages]
    if not all(isinstance(c, str) for c in contents):
        raise BadRequest(400, "messages[].content: expected strings")
    return " ".join(contents), max_tokens, stream


def tiny_arch(arch: ModelArch) -> ModelArch:
    """The same family with 2 layers, hidden 64, 4 heads (2 KV heads), MLP 128 and a 512-token vocabulary."""
    a = arch.layers[0].attention
    attention = AttentionSpec(heads=4, kv_heads=2, head_dim=16, v_head_dim=16, qkv_bias=a.qkv_bias, o_bias=a.o_bias,
                              qk_norm=a.qk_norm)
    layer = LayerSpec(attention=attention, mlp=MLPSpec(intermediate=128, gated=True, act="silu"))
    return replace(arch, name=f"{arch.name}-tiny", hidden=64, vocab=512, layers=(layer, layer), extra_tensors=())


class ModelServer:
    """The decoder and its generation loop; one lock serialises the steps of concurrent requests."""

    def __init__(self, preset: str, tiny: bool = True, seed: int = 0) -> None:
        arch = load_model(preset)
        self.arch = tiny_arch(arch) if tiny else arch
        torch.manual_seed(seed)
        self.model = Decoder(self.arch).eval()
        self.lock = threading.Lock()
        self.name = self.arch.name

    def generate(self, prompt: str, max_tokens: int):
        """Yield generated token ids one at a time (greedy, with a KV cache)."""
        ids = [ord(c) % self.arch.vocab for c in prompt][-512:] or [0]
        caches = self.model.empty_caches()
        with torch.inference_mode():
            with self.lock:
                logits = self.model(torch.tensor([ids]), caches)
            position = len(ids)
            for _ in range(max_tokens):
                token = int(logits[0, -1].argmax())
                yield token
                with self.lock:
                    logits = self.model(torch.tensor([[token]]), caches, start=position)
                position += 1


def _handler(server: ModelServer, limits: ServerLimits):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = limits.idle_timeout_s

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def setup(self) -> None:
            super().setup()
            self._reader = _DeadlineReader(self.connection, limits.idle_timeout_s)
            self.rfile = io.BufferedReader(self._reader)

        def handle_one_request(self) -> None:
            self._reader.deadline = time.monotonic() + limits.request_timeout_s
            super().handle_one_request()

        def _body(self) -> bytes:
            """The request body, at most `max_body_bytes`; BadRequest for anything else."""
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                raise BadRequest(411, "a chunked request body is not accepted: send Content-Length")
            values = self.headers.get_all("Content-Length") or []
            if not values:
                return b""
            text = values[0].strip()
            if len(set(values)) > 1 or not text.isdigit() or not text.isascii():
                raise BadRequest(400, f"Content-Length {values[0][:40]!r}: expected one decimal byte count")
            length = int(text)
            if length > limits.max_body_bytes:
                if length <= limits.drain_bytes:
                    self._drain(length)
                raise BadRequest(413, f"a body of {length} bytes is over the {limits.max_body_bytes}-byte limit")
            try:
                data = self.rfile.read(length)
            except TimeoutError:
                raise BadRequest(408, f"the {length}-byte body did not arrive within "
                                      f"{limits.request_timeout_s:g} s") from None
            if len(data) < length:
                raise BadRequest(400, f"the body ended after {len(data)} of {length} bytes")
            return data

        def _drain(self, length: int) -> None:
            try:
                while length > 0:
                    chunk = self.rfile.read(min(length, 64 * 1024))
                    if not chunk:
                        return
                    length -= len(chunk)
            except (TimeoutError, OSError):
                return

        def _json(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _route(self) -> str:
            """The request's path without its query string (`?api-version=…`), as a web framework routes."""
            return self.path.partition("?")[0]

        def do_GET(self) -> None:  # noqa: N802
            route = self._route()
            if route == "/health":
                self._json(200, {"status": "ok", "model": server.name})
            elif route == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": server.name, "object": "model"}]})
            else:
                self._json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802
            route = self._route()
            chat = route == "/v1/chat/completions"
            if not chat and route != "/v1/completions":
                self._json(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                data = self._body()
            except BadRequest as e:  # the body was not read whole: the connection cannot go on
                self.close_connection = True
                self._error(e.code, str(e))
                return
            try:
                try:
                    body = json.loads(data or b"{}")
                except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
                    raise BadRequest(400, f"the body is not JSON ({str(e)[:80]})") from None
                prompt, max_tokens, stream = _request_fields(body, chat)
            except BadRequest as e:  # the body was read: the kept-alive connection goes on
                self._error(e.code, str(e))
                return
            self.connection.settimeout(limits.idle_timeout_s)  # writes: the idle timeout, not the request's
            self._reader.deadline = None
            rid = f"cmpl-{uuid.uuid4().hex[:12]}"
            kind = "chat.completion" if chat else "text_completion"
            if not stream:
                text = "".join(f" t{t}" for t in server.generate(prompt, max_tokens))
                choice = {"index": 0, "finish_reason": "length",
                          **({"message": {"role": "assistant", "content": text}} if chat else {"text": text})}
                self._json(200, {"id": rid, "object": kind, "created": int(time.time()), "model": server.name,
                                 "choices": [choice], "usage": {"completion_tokens": max_tokens}})
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for token in server.generate(prompt, max_tokens):
                delta = {"delta": {"content": f" t{token}"}} if chat else {"text": f" t{token}"}
                chunk = {"id": rid, "object": f"{kind}.chunk", "model": server.name,
                         "choices": [{"index": 0, **delta, "finish_reason": None}]}
                self._chunk(f"data: {json.dumps(chunk)}\n\n".encode())
            self._chunk(b"data: [DONE]\n\n")
            self._chunk(b"")

        def _error(self, code: int, message: str) -> None:
            data = json.dumps({"error": {"message": f"bad request: {message}", "code": code}}).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    return Handler


def serve(preset: str, *, host: str = "127.0.0.1", port: int = 8000, tiny: bool = True,
          limits: ServerLimits | None = None) -> ThreadingHTTPServer:
    """A started-but-not-running server (call `.serve_forever()`; `.server_address` has the port)."""
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise ConfigError(f"--host {host!r}: the reference server listens on the loopback interface only")
    limits = limits or ServerLimits()
    model = ModelServer(preset, tiny=tiny)
    server_class = _QuietServer6 if ":" in host else _QuietServer
    httpd = server_class((host, port), _handler(model, limits), max_connections=limits.max_connections)
    httpd.daemon_threads = True
    return httpd


class _QuietServer(ThreadingHTTPServer):
    """At most `max_connections` served at once (503 past that); clients that drop their connection or time
    out are normal under load: no traceback for them."""

    request_queue_size = 128
    """The listen backlog (socketserver's default is 5: under a burst of connections the kernel drops the SYNs
    past it, and each dropped client waits a second before it retries)."""

    def __init__(self, address: Any, handler: Any, *, max_connections: int) -> None:
        self._slots = threading.BoundedSemaphore(max_connections)
        self._active = 0
        self._count = threading.Lock()
        super().__init__(address, handler)

    @property
    def active_connections(self) -> int:
        """Connections being served now (each holds one thread)."""
        return self._active

    def _acquire(self) -> bool:
        if not self._slots.acquire(blocking=False):
            return False
        with self._count:
            self._active += 1
        return True

    def _release(self) -> None:
        with self._count:
            self._active -= 1
        self._slots.release()

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._acquire():
            try:
                request.settimeout(1.0)
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class _QuietServer6(_QuietServer):
    address_family = socket.AF_INET6
