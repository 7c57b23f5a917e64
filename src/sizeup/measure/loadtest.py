"""Serving load test: open-loop Poisson arrivals (`rate`) or closed-loop concurrency, streaming
OpenAI-compatible requests (or plain HTTP), with TTFT, inter-token latency (TPOT) and end-to-end
percentiles, request and token throughput, and errors and timeouts by kind. Bounded in request count
and time: it stops by itself.

A request counts as ok only when it got what the protocol promises: for `openai`, a 2xx answer of
`text/event-stream` whose events carry at least one token and end with `data: [DONE]`; for `http`, a
2xx answer. Anything else is an error with its reason (ERROR_REASONS): a redirect, an HTTP error, a plain
JSON answer where a stream was asked, an HTML page (a login wall), a stream with no token or cut short.
The URL and the prompts are checked before the first request (measure/load_inputs.py).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import numpy as np

from sizeup.errors import ConfigError, MeasureError
from sizeup.measure.load_inputs import check_url, redact_url

__all__ = ["LoadConfig", "RequestRecord", "LoadResult", "run_load", "percentiles", "ERROR_REASONS", "describe_error"]

POINTS = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p999": 99.9}
DEFAULT_PROMPTS = ("Summarise the plot of a novel in three sentences.", "Explain what a KV cache is.",
                   "Write a haiku about GPUs.", "List five uses of a hash map.")


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadConfig:
    url: str
    api: str = "openai"
    """openai (chat/completions, streamed) | http (a GET or POST of `body`, end-to-end only)"""
    rate: float | None = None
    concurrency: int | None = None
    duration_s: float | None = 60.0
    requests: int | None = None
    max_tokens: int = 64
    prompts: tuple[str, ...] = DEFAULT_PROMPTS
    timeout_s: float = 30.0
    """The longest one request may take, from sending it to its last byte."""
    seed: int = 0

    def __post_init__(self) -> None:
        check_url(self.url)
        if not self.prompts or not all(isinstance(p, str) and p for p in self.prompts):
            raise ConfigError("prompts: expected at least one non-empty prompt")
        if self.api not in ("openai", "http"):
            raise ConfigError(f"--api {self.api!r}: expected openai or http")
        if (self.rate is None) == (self.concurrency is None):
            raise ConfigError("give exactly one of --rate (open loop) and --concurrency (closed loop)")
        if self.rate is not None and self.rate <= 0:
            raise ConfigError(f"--rate {self.rate}: expected requests per second > 0")
        if self.concurrency is not None and self.concurrency < 1:
            raise ConfigError(f"--concurrency {self.concurrency}: expected 1 or more")
        if self.duration_s is None and self.requests is None:
            raise ConfigError("give --duration or --requests: a load test must end by itself")
        if self.requests is not None and self.requests < 1:
            raise ConfigError(f"--requests {self.requests}: expected 1 or more")
        if not (isinstance(self.timeout_s, (int, float)) and 0 < self.timeout_s < float("inf")):
            raise ConfigError(f"--timeout {self.timeout_s!r}: expected a positive time")
        if self.max_tokens < 1:
            raise ConfigError(f"--max-tokens {self.max_tokens}: expected 1 or more")


@dataclass(slots=True)
class RequestRecord:
    start: float
    first_token: float | None = None
    end: float | None = None
    tokens: int = 0
    token_times: list[float] = field(default_factory=list)
    status: str = "ok"
    """ok, or an error reason: a key of ERROR_REASONS, or http_<code> / redirect_<code>"""
    finished: float | None = None
    """When the request ended, whatever its status (`end` is set only for a complete answer)."""

    @property
    def ttft_s(self) -> float | None:
        return None if self.first_token is None else self.first_token - self.start

    @property
    def e2e_s(self) -> float | None:
        return None if self.end is None else self.end - self.start

    @property
    def tpot_s(self) -> float | None:
        if self.first_token is None or self.end is None or self.tokens < 2:
            return None
        return (self.end - self.first_token) / (self.tokens - 1)


def percentiles(values: list[float]) -> dict[str, float]:
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    if arr.size == 0:
        return {}
    return {k: float(np.percentile(arr, q)) for k, q in POINTS.items()} | {"mean": float(arr.mean())}


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadResult:
    config: LoadConfig
    records: tuple[RequestRecord, ...]
    elapsed_s: float
    started_s: float = 0.0
    """`time.perf_counter()` when the first request was sent: the records' times are on this clock."""

    @property
    def ok(self) -> list[RequestRecord]:
        return [r for r in self.records if r.status == "ok"]

    def errors(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.records:
            if r.status != "ok":
                out[r.status] = out.get(r.status, 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        ok = self.ok
        itl = [b - a for r in ok for a, b in zip(r.token_times, r.token_times[1:])]
        errors = self.errors()
        return {
            "url": redact_url(self.config.url), "requests": len(self.records), "ok": len(ok), "errors": errors,
            "error_reasons": {k: describe_error(k) for k in errors},
            "elapsed_s": self.elapsed_s, "request_throughput_per_s": len(ok) / self.elapsed_s if self.elapsed_s else 0,
            "token_throughput_per_s": sum(r.tokens for r in ok) / self.elapsed_s if self.elapsed_s else 0,
            "ttft_s": percentiles([r.ttft_s for r in ok]), "tpot_s": percentiles([r.tpot_s for r in ok]),
            "itl_s": percentiles(itl), "e2e_s": percentiles([r.e2e_s for r in ok]),
        }


MAX_LINE_BYTES = 1 << 20
"""A server-sent-events line longer than this is a protocol error (memory stays bounded whatever the server sends)."""


async def _lines(response):
    """The lines of a streamed body, each at most MAX_LINE_BYTES (ValueError past that)."""
    buffer = b""
    async for chunk in response.aiter_bytes():
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield line.rstrip(b"\r").decode("utf-8", errors="replace")
        if len(buffer) > MAX_LINE_BYTES:
            raise ValueError(f"a line of over {MAX_LINE_BYTES} bytes")
    if buffer:
        yield buffer.decode("utf-8", errors="replace")


ERROR_REASONS = {
    "timeout": "no complete answer within --timeout",
    "connect": "the connection was refused or failed",
    "protocol": "a malformed HTTP answer or stream event",
    "not_streamed": "a plain JSON answer where a token stream was asked (the server ignored stream: true)",
    "html_page": "an HTML page, not an LLM answer (a login wall or a proxy's page?)",
    "not_event_stream": "an answer that is not text/event-stream",
    "no_tokens": "a stream that carried no token",
    "truncated": "a stream that ended before data: [DONE]",
    "stream_error": "an error event inside the stream",
}
"""Why a request was not ok; besides these, http_<code> (an HTTP error) and redirect_<code> (a redirect,
not followed: the URL should name the endpoint itself)."""


def describe_error(reason: str) -> str:
    """One phrase for an error reason of a RequestRecord."""
    kind, _, code = reason.partition("_")
    if kind == "http" and code.isdigit():
        return f"HTTP {code} from the server"
    if kind == "redirect" and code.isdigit():
        return f"a {code} redirect (not followed: give the endpoint's own URL)"
    return ERROR_REASONS.get(reason, reason)


def _head_error(response, streamed: bool) -> str | None:
    """The error reason of a response's status line and content type, or None when its body may be read
    as what the protocol promises."""
    code = response.status_code
    if 300 <= code < 400:
        return f"redirect_{code}"
    if code >= 400 or code < 200:
        return f"http_{code}"
    if not streamed:
        return None
    ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == "text/event-stream":
        return None
    if ctype == "application/json" or ctype.endswith("+json"):
        return "not_streamed"
    return "html_page" if ctype in ("text/html", "application/xhtml+xml") else "not_event_stream"


def _token_text(chunk: object) -> str | None:
    """The text of one streamed chunk ({"choices": [{"delta": {"content": …}} or {"text": …}]}); ValueError
    for a chunk of another shape."""
    if not isinstance(chunk, dict):
        raise ValueError("a chunk that is not a JSON object")
    choices = chunk.get("choices") or [{}]
    if not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise ValueError("choices is not a list of objects")
    delta = choices[0].get("delta") or {}
    text = (delta.get("content") if isinstance(delta, dict) else None) or choices[0].get("text")
    if text is not None and not isinstance(text, str):
        raise ValueError("a token that is not a string")
    return text


async def _drain(response) -> None:
    """Read and discard a body: memory bounded by the chunk size."""
    async for _ in response.aiter_bytes():
        pass


async def _read_stream(response, record: RequestRecord) -> str:
    """Read a server-sent-events body into `record` (token times); the request's status: ok, or why not."""
    async for line in _lines(response):
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return "ok" if record.tokens else "no_tokens"
        try:
            chunk = json.loads(data)
            if isinstance(chunk, dict) and chunk.get("error") is not None:
                return "stream_error"
            text = _token_text(chunk)
        except (ValueError, RecursionError):
            return "protocol"
        if text:
            now = time.perf_counter()
            if record.first_token is None:
                record.first_token = now
            record.token_times.append(now)
            record.tokens += 1
    return "truncated" if record.tokens else "no_tokens"


async def _one(client, cfg: LoadConfig, prompt: str, record: RequestRecord) -> None:
    """One request, recorded; every failure (the server's or the wire's) becomes the record's status."""
    import httpx

    try:
        if cfg.api == "http":
            async with client.stream("GET", cfg.url) as response:
                await _drain(response)
            record.end = time.perf_counter()
            record.first_token = record.end
            record.status = _head_error(response, streamed=False) or "ok"
            return
        body = {"model": "default", "messages": [{"role": "user", "content": prompt}], "max_tokens": cfg.max_tokens,
                "stream": True}
        async with client.stream("POST", cfg.url, json=body) as response:
            error = _head_error(response, streamed=True)
            if error is not None:
                await _drain(response)
                record.status = error
            else:
                record.status = await _read_stream(response, record)
        record.end = time.perf_counter()
    except httpx.TimeoutException:
        record.status, record.end = "timeout", None
    except httpx.ConnectError:
        record.status = "connect"
    except (httpx.HTTPError, httpx.StreamError, ValueError):  # a reset, a malformed response, a huge line
        record.status = "protocol"


async def _bounded(client, cfg: LoadConfig, prompt: str, record: RequestRecord) -> None:
    """`_one` within `timeout_s` from start to end: a server that trickles its answer is a timeout."""
    try:
        await asyncio.wait_for(_one(client, cfg, prompt, record), timeout=cfg.timeout_s)
    except asyncio.TimeoutError:
        record.status, record.end = "timeout", None
    finally:
        record.finished = time.perf_counter()


async def _run(cfg: LoadConfig, progress: Callable[[int, int], None] | None = None,
               beside: Callable[[float], Awaitable[None]] | None = None) -> LoadResult:
    import httpx

    rng = random.Random(cfg.seed)
    records: list[RequestRecord] = []
    timeout = httpx.Timeout(cfg.timeout_s, connect=3.0)
    limits = httpx.Limits(max_connections=max(cfg.concurrency or 0, 256))
    start = time.perf_counter()
    deadline = start + cfg.duration_s if cfg.duration_s is not None else None
    limit = cfg.requests if cfg.requests is not None else 10**9

    def open_request() -> bool:
        now = time.perf_counter()
        return len(records) < limit and (deadline is None or now < deadline)

    finished = 0

    def done(*_) -> None:
        nonlocal finished
        finished += 1
        if progress is not None:
            progress(finished, len(records))

    async with httpx.AsyncClient(timeout=timeout, limits=limits) as client:
        tasks = []
        side = asyncio.create_task(beside(start)) if beside is not None else None
        if cfg.rate is not None:  # open loop: Poisson arrivals, independent of the responses
            while open_request():
                record = RequestRecord(start=time.perf_counter())
                records.append(record)
                task = asyncio.create_task(_bounded(client, cfg, rng.choice(cfg.prompts), record))
                task.add_done_callback(done)
                tasks.append(task)
                await asyncio.sleep(rng.expovariate(cfg.rate))
        else:  # closed loop: each worker sends its next request when the last one is done
            async def worker() -> None:
                while open_request():
                    record = RequestRecord(start=time.perf_counter())
                    records.append(record)
                    await _bounded(client, cfg, rng.choice(cfg.prompts), record)
                    done()

            tasks = [asyncio.create_task(worker()) for _ in range(cfg.concurrency)]
        if side is not None:
            await side
        grace = cfg.timeout_s + 1.0
        done, pending = await asyncio.wait(tasks, timeout=(deadline - time.perf_counter() + grace)
                                           if deadline else None)
        for task in pending:  # a hung server: whatever is still open is a timeout
            task.cancel()
        for record in records:
            if record.end is None and record.status == "ok":
                record.status = "timeout"
    return LoadResult(config=cfg, records=tuple(records), elapsed_s=time.perf_counter() - start, started_s=start)


def check_reachable(url: str, timeout_s: float = 3.0) -> None:
    """Fail fast with one line when nothing listens at `url`."""
    import socket

    parsed = urlparse(url)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((parsed.hostname, port), timeout=timeout_s):
            pass
    except (OSError, UnicodeError) as e:  # refused, unknown host, a name the resolver cannot encode
        raise MeasureError(f"cannot reach {redact_url(url)}: {getattr(e, 'strerror', None) or e}") from None


def run_load(cfg: LoadConfig, progress: Callable[[int, int], None] | None = None,
             beside: Callable[[float], Awaitable[None]] | None = None) -> LoadResult:
    """Send the load of `cfg`; `progress(finished, sent)` after each request ends. `beside(start)`, a coroutine
    function, runs alongside the requests from the start (`time.perf_counter()`), e.g. a fault to inject
    (measure/chaos.py); the test waits for it before it ends."""
    check_reachable(cfg.url)
    return asyncio.run(_run(cfg, progress, beside))
