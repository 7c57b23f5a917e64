"""What `sizeup load` reads from the user, checked before any request is sent: the endpoint URL and the
prompts file. Every refusal is one ConfigError line naming the value.

- URL: `http://` or `https://`, a host (each label 1-63 characters), a port in 1-65535, no whitespace or
  control character (a CR LF in a URL would split the request line into forged headers), at most
  MAX_URL_CHARS. The URL as typed is what requests go to (httpx sends a `user:password@` as basic auth);
  everywhere it is shown or stored (errors, `--json`, the run store, the workload hash) it passes through
  `redact_url`, which replaces a user name and password with `***` and the value of every query parameter
  whose name says it is a secret (token, key, secret, password, auth, signature, session, credential) with
  `***`: a run store is shared with a team, and a terminal is screen-shared.
- Prompts file: a regular file opened by `sizeup.files` (a FIFO, a device such as /dev/zero, a directory
  or a socket is refused before anything is read, so nothing hangs or fills memory), at most
  MAX_PROMPTS_BYTES, UTF-8 text (a BOM is accepted; NUL and other control bytes mean binary data and are
  refused). Two layouts:
  - text (any name): one prompt per line; blank lines are skipped;
  - JSON Lines (a name ending in `.jsonl`): one object per line with a non-empty string `prompt`
    (`{"prompt": "Explain a KV cache."}`); other fields are ignored, blank lines skipped.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

from sizeup.errors import ConfigError
from sizeup.files import read_regular

__all__ = ["check_url", "redact_url", "read_prompts", "MAX_URL_CHARS", "MAX_PROMPTS_BYTES", "MAX_PROMPTS"]

MAX_URL_CHARS = 2048
MAX_PROMPTS_BYTES = 16 * 2**20
"""A prompts file larger than this is refused before it is read (16 MiB: some 100,000 long prompts)."""
MAX_PROMPTS = 1_000_000
_UNSAFE_URL = re.compile(r"[\x00-\x20\x7f]")
_BINARY = re.compile(b"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*:)?//[^/?#]*@")
"""A URL's `//user:password@` (everything up to the authority's last '@')."""
_SECRET_PARAM = re.compile(r"(?i)token|key|secret|passw|pwd|auth|sig|session|credential|jwt|bearer")
"""Query parameter names whose values are secrets: token, access_token, api_key, apikey, key, secret,
password, auth, sig, signature, X-Amz-Signature, session_id, credential (pre-signed URLs and API gateways)."""


def redact_url(url: str) -> str:
    """`url` as it may be shown or stored: `user:password@` as `***@`, secret query values as `***`. Works on
    text that is not a valid URL too (it is also what a refusal of one shows)."""
    text = _USERINFO.sub(lambda m: f"{m.group(1) or ''}//***@", url, count=1)
    head, sep, rest = text.partition("?")
    if not sep:
        return text
    query, hash_sep, fragment = rest.partition("#")
    pairs = []
    for pair in query.split("&"):
        name, eq, value = pair.partition("=")
        pairs.append(f"{name}=***" if eq and value and _SECRET_PARAM.search(name) else pair)
    return f"{head}?{'&'.join(pairs)}{hash_sep}{fragment}"


def _shown(text: str) -> str:
    text = redact_url(text)
    return repr(text) if len(text) <= 80 else repr(text[:60]) + f"… ({len(text):,} characters)"


def check_url(url: object) -> str:
    """`url` when it is an http(s) URL with a host and a valid port; ConfigError otherwise."""
    if not isinstance(url, str) or not url:
        raise ConfigError(f"URL {url!r}: expected http://HOST:PORT/…")
    if len(url) > MAX_URL_CHARS:
        raise ConfigError(f"URL {_shown(url)}: {len(url):,} characters; expected at most {MAX_URL_CHARS:,}")
    bad = _UNSAFE_URL.search(url)
    if bad:
        raise ConfigError(f"URL {_shown(url)}: contains {bad.group()!r} at position {bad.start()}; a URL has no "
                          "spaces or control characters (percent-encode them)")
    try:
        parts = urlsplit(url)
    except ValueError as e:  # an unbalanced '[' of an IPv6 host
        raise ConfigError(f"URL {_shown(url)}: not a URL ({e})") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"URL {_shown(url)}: expected http://HOST:PORT/… or https://…")
    if not parts.hostname:
        raise ConfigError(f"URL {_shown(url)}: no host; expected http://HOST:PORT/…")
    if ":" not in parts.hostname:  # a name or IPv4 address (an IPv6 literal has colons)
        try:
            parts.hostname.encode("idna")  # empty or over-long labels, what the resolver would choke on
        except UnicodeError:
            raise ConfigError(f"URL {_shown(url)}: host {_shown(parts.hostname)} is not a host name (empty or "
                              "over-long label)") from None
    try:
        port = parts.port
    except ValueError:
        port_text = parts.netloc.rpartition(":")[2]
        what = f"port {port_text} is out of range" if port_text.isdigit() else f"port {port_text!r} is not a number"
        raise ConfigError(f"URL {_shown(url)}: {what}; expected a port 1-65535") from None
    if port == 0:
        raise ConfigError(f"URL {_shown(url)}: port 0 is out of range; expected a port 1-65535")
    return url


def read_prompts(path: str | os.PathLike) -> tuple[str, ...]:
    """The prompts of a text or JSON Lines file (module docstring); ConfigError names the file and the problem."""
    where = f"--prompts {str(path)!r}"
    raw = read_regular(path, what="--prompts file", error=ConfigError, limit=MAX_PROMPTS_BYTES)
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ConfigError(f"{where}: UTF-16 text; save the prompts as UTF-8")
    bad = _BINARY.search(raw)
    if bad:
        line = raw.count(b"\n", 0, bad.start()) + 1
        raise ConfigError(f"{where}: binary data, not prompts (control character {chr(bad.group()[0])!r} on line "
                          f"{line})")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{where}: not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start:,}): binary data, "
                          "or another encoding") from None
    lines = [(n, line.strip()) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    prompts = tuple(_jsonl_prompt(line, n, where) for n, line in lines) if str(path).endswith(".jsonl") \
        else tuple(line for _, line in lines)
    if not prompts:
        raise ConfigError(f"{where}: the file has no prompts (one per line, or JSON Lines with \"prompt\")")
    if len(prompts) > MAX_PROMPTS:
        raise ConfigError(f"{where}: {len(prompts):,} prompts; expected at most {MAX_PROMPTS:,}")
    return prompts


def _jsonl_prompt(line: str, number: int, where: str) -> str:
    import json

    try:
        record = json.loads(line)
    except (ValueError, RecursionError) as e:
        raise ConfigError(f"{where}: line {number} is not JSON ({str(e)[:80]}); a .jsonl file holds one "
                          "{\"prompt\": …} object per line") from None
    prompt = record.get("prompt") if isinstance(record, dict) else None
    if not isinstance(prompt, str) or not prompt.strip():
        raise ConfigError(f"{where}: line {number}: expected an object with a non-empty string \"prompt\"")
    return prompt
