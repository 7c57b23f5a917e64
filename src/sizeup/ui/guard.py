"""The UI's front door: one ASGI middleware that every request passes before any route or static file.

- **Host**: only this machine's loopback names (127.0.0.1, localhost, [::1]), the bound host and any
  `--allowed-host`. A page on evil.example whose name is rebound to 127.0.0.1 sends `Host: evil.example`
  and is refused, so DNS rebinding reads nothing.
- **Other sites**: a request the browser marks `Sec-Fetch-Site: cross-site` or `same-site` (another
  port of 127.0.0.1 is the same site) is refused unless it is a top-level GET navigation (a link to a
  page), so no other page can fetch, embed or frame an answer, nor make the UI compute by an <img>.
- **State-changing requests** (any method but GET, HEAD, OPTIONS): the `Origin` (or, without one, the
  `Referer`) must be this UI's own origin, `Sec-Fetch-Site` (when the browser sends it) `same-origin`,
  and `X-CSRF-Token` the session's token; `/api/` posts must be `Content-Type: application/json`. A
  cross-site form, `text/plain` or `fetch` post fails each of these on its own.
- **Sessions**: a random id in an HttpOnly, SameSite=Strict cookie; the CSRF token is an HMAC of it
  under a per-server secret (`request.state.csrf_token`, put in every page for htmx to send).
- **Sizes**: a query string of at most MAX_QUERY_BYTES and MAX_FIELDS parameters.
- **Every answer** carries a Content-Security-Policy (scripts and styles from this origin only, no
  framing), `nosniff`, a same-origin resource policy and no referrer to other sites.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import secrets
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["Guard", "LOOPBACK_HOSTS", "MAX_QUERY_BYTES", "MAX_FIELDS", "TOKEN_HEADER", "host_name"]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
MAX_QUERY_BYTES = 8192
MAX_FIELDS = 64
TOKEN_HEADER = "x-csrf-token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'")
_HEADERS = {"content-security-policy": CSP, "x-content-type-options": "nosniff", "x-frame-options": "DENY",
            "referrer-policy": "same-origin", "cross-origin-resource-policy": "same-origin",
            "cross-origin-opener-policy": "same-origin"}


def host_name(host: str) -> str | None:
    """The name part of a Host header ('127.0.0.1:8765' -> '127.0.0.1', '[::1]:80' -> '::1'), lower case;
    None when it is not a host[:port]."""
    host = host.strip().lower()
    if host.startswith("["):
        name, sep, rest = host[1:].partition("]")
        port = rest.removeprefix(":") if rest.startswith(":") else rest
        return name if sep and (not port or port.isdigit()) else None
    name, _, port = host.partition(":")
    if not name or (port and not port.isdigit()) or any(c in name for c in "/@\\ \t"):
        return None
    return name


class Guard:
    """Wraps the app: refuses what `__doc__` lists, adds the session cookie and the security headers."""

    def __init__(self, app: ASGIApp, *, hosts: Iterable[str] = ()) -> None:
        self.app = app
        self.hosts = LOOPBACK_HOSTS | {h.strip().lower().strip("[]") for h in hosts if h.strip()}
        self.secret = secrets.token_bytes(32)
        self.cookie = f"sizeup_session_{secrets.token_hex(4)}"  # one per server: another UI's cookie is not ours

    def token(self, session: str) -> str:
        return hmac.new(self.secret, session.encode(), hashlib.sha256).hexdigest()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # no websockets here
            return
        headers = Headers(scope=scope)
        session = cookie_parser(headers.get("cookie", "")).get(self.cookie, "")
        fresh = not (len(session) == 32 and all(c in "0123456789abcdef" for c in session))
        refusal = self._refusal(scope, headers, "" if fresh else session)
        if fresh:
            session = secrets.token_hex(16)
        scope.setdefault("state", {})["csrf_token"] = self.token(session)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                out = MutableHeaders(scope=message)
                for name, value in _HEADERS.items():
                    if name not in out:
                        out[name] = value
                if fresh:
                    out.append("set-cookie", f"{self.cookie}={session}; Path=/; HttpOnly; SameSite=Strict")
            await send(message)

        if refusal is not None:
            status, text = refusal
            await _answer(scope, send_with_headers, status, text)
            return
        try:
            await self.app(scope, receive, send_with_headers)
        except asyncio.CancelledError:  # the server stopping (Ctrl-C) with this request still computing
            with contextlib.suppress(Exception):
                await _answer(scope, send_with_headers, 503, "the UI stopped before this request was answered")

    def _refusal(self, scope: Scope, headers: Headers, session: str) -> tuple[int, str] | None:
        host = headers.get("host", "")
        name = host_name(host)
        if name not in self.hosts:
            shown = host if len(host) <= 60 else host[:40] + "…"
            return 421, (f"Host {shown!r} is not this UI's (expected {', '.join(sorted(self.hosts))}): "
                         "requests that reach it under another name are refused")
        query = scope.get("query_string", b"")
        if len(query) > MAX_QUERY_BYTES or query.count(b"&") >= MAX_FIELDS:
            return 414, (f"query string of {len(query):,} bytes: expected at most {MAX_QUERY_BYTES:,} and "
                         f"{MAX_FIELDS} fields")
        site = headers.get("sec-fetch-site")
        if site in ("cross-site", "same-site") and not _navigation(scope, headers):
            return 403, f"refused: a {site} request cannot use this UI (only a link to one of its pages)"
        if scope["method"] in SAFE_METHODS:
            return None
        origin = headers.get("origin") or _origin_of(headers.get("referer", ""))
        if not origin or origin == "null":
            return 403, ("refused: a request that changes anything must come from this UI's own pages "
                         "(no Origin or Referer header)")
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or parts.netloc.lower() != host.strip().lower():
            return 403, f"refused: a request from another origin ({origin[:80]}) cannot use this UI"
        if site is not None and site not in ("same-origin", "none"):
            return 403, f"refused: a {site} request cannot use this UI"
        sent = headers.get(TOKEN_HEADER, "").encode("latin-1", "replace")  # any bytes: compared, never decoded
        if not session or not hmac.compare_digest(sent, self.token(session).encode()):
            return 403, ("refused: missing or stale CSRF token (reload the page; API clients take one from "
                         "GET /api/session and send it as X-CSRF-Token with the session cookie)")
        if scope["path"].startswith("/api/"):
            ctype = headers.get("content-type", "").split(";")[0].strip().lower()
            if ctype != "application/json":
                return 415, f"Content-Type {ctype or 'none'!r}: the API takes application/json"
        return None


def _navigation(scope: Scope, headers: Headers) -> bool:
    """A top-level GET navigation (a link followed): the one request from another site that is served
    (fetch-metadata resource isolation: scripts, images, frames and fetches from other sites are not)."""
    return (scope["method"] == "GET" and headers.get("sec-fetch-mode") == "navigate"
            and headers.get("sec-fetch-dest") == "document")


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""


async def _answer(scope: Scope, send: Send, status: int, text: str) -> None:
    if scope["path"].startswith("/api/"):
        body, ctype = json.dumps({"error": text}).encode(), b"application/json"
    else:
        body, ctype = text.encode(), b"text/plain; charset=utf-8"
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", ctype), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
