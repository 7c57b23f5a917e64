"""A small OpenAI-compatible server for tests and demos: a randomly initialised decoder from a preset
(or a tiny one of the same family) generating token by token on the CPU, streamed as server-sent
events. Standard library only (http.server), bound to 127.0.0.1 by default.

Endpoints: POST /v1/chat/completions and /v1/completions (`stream`, `max_tokens`), GET /health.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import torch

from sizeup.errors import ConfigError
from sizeup.ingest.hf_config import AttentionSpec, LayerSpec, MLPSpec, ModelArch, load_model
from sizeup.measure.llm import Decoder

__all__ = ["tiny_arch", "ModelServer", "serve"]

MAX_TOKENS_LIMIT = 4096


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


def _handler(server: ModelServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _json(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802
            if self.path == "/health":
                self._json(200, {"status": "ok", "model": server.name})
            elif self.path == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": server.name, "object": "model"}]})
            else:
                self._json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802
            chat = self.path == "/v1/chat/completions"
            if not chat and self.path != "/v1/completions":
                self._json(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                max_tokens = int(body.get("max_tokens", 16))
                if not 1 <= max_tokens <= MAX_TOKENS_LIMIT:
                    raise ValueError(f"max_tokens must be 1..{MAX_TOKENS_LIMIT}")
                prompt = " ".join(m.get("content", "") for m in body.get("messages", [])) if chat \
                    else str(body.get("prompt", ""))
            except (ValueError, TypeError, AttributeError) as e:
                self._json(400, {"error": {"message": f"bad request: {e}"}})
                return
            rid = f"cmpl-{uuid.uuid4().hex[:12]}"
            kind = "chat.completion" if chat else "text_completion"
            if not body.get("stream"):
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

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    return Handler


def serve(preset: str, *, host: str = "127.0.0.1", port: int = 8000, tiny: bool = True) -> ThreadingHTTPServer:
    """A started-but-not-running server (call `.serve_forever()`; `.server_address` has the port)."""
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise ConfigError(f"--host {host!r}: the reference server listens on the loopback interface only")
    model = ModelServer(preset, tiny=tiny)
    httpd = _QuietServer((host, port), _handler(model))
    httpd.daemon_threads = True
    return httpd


class _QuietServer(ThreadingHTTPServer):
    """Clients that drop their keep-alive connection are normal under load: no traceback for them."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)
