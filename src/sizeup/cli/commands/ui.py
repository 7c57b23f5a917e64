"""`sizeup ui [--port N] [--host 127.0.0.1] [--allow-remote] [--no-browser]`: the local web app (extra `sizeup[ui]`)."""

from __future__ import annotations

import argparse
import ipaddress
import re
import sys

from sizeup.units import number_flag

LOCALHOST = "127.0.0.1"
_HOSTNAME = re.compile(r"(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*",
                       re.IGNORECASE)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ui", help="a local web app: estimate, compare, train, plan and runs in the browser "
                                  "(needs sizeup[ui])",
                       description="Serves the estimator and planner on http://127.0.0.1:PORT. It reads only presets, "
                                   "catalog names and files uploaded to it, runs no user code, and writes only into "
                                   "its own temp dir (docs/security.md).")
    p.add_argument("--port", type=number_flag(integer=True, minimum=1, maximum=65535), default=8765,
                   help="port (default 8765)")
    p.add_argument("--host", default=LOCALHOST,
                   help="address to bind (default 127.0.0.1: this machine only; another needs --allow-remote)")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow binding an address other machines can reach (anyone who reaches it can use the UI: "
                        "it has no login; prefer an SSH tunnel)")
    p.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                   help="a Host name browsers may use to reach the UI besides 127.0.0.1, localhost, [::1] and the "
                        "bound address (repeatable; needed behind a name or a wildcard bind)")
    p.add_argument("--time-limit", type=number_flag(minimum=1, maximum=3600, unit="s"), default=None, metavar="S",
                   help="longest a request may compute before it is stopped (default 20 s)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser tab")
    p.set_defaults(func=run)


def check_host(host: str, allow_remote: bool) -> tuple[str, bool]:
    """(the address to bind, whether it is loopback only); ConfigError for a malformed or empty address, and
    for one other machines can reach without --allow-remote."""
    from sizeup.errors import ConfigError

    text = host.strip()
    if not text:
        raise ConfigError("--host '': expected an address such as 127.0.0.1 (an empty host would listen on every "
                          "interface)")
    try:
        address = ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        if not _HOSTNAME.fullmatch(text):
            raise ConfigError(f"--host {host[:80]!r}: expected an IP address or a host name") from None
        loopback = text.lower() == "localhost"
    else:
        text = str(address)
        loopback = address.is_loopback
    if not loopback and not allow_remote:
        raise ConfigError(f"--host {text}: other machines could reach the UI, which has no login; add --allow-remote "
                          "to mean it, or keep 127.0.0.1 and use an SSH tunnel (docs/security.md)")
    return text, loopback


def run(args: argparse.Namespace) -> int:
    from sizeup.errors import ConfigError

    host, loopback = check_host(args.host, args.allow_remote)
    extra = []
    for name in args.allowed_host:
        check_host(name, True)
        extra.append(name.strip().strip("[]").lower())
    try:
        import uvicorn

        from sizeup.ui.app import create_app
        from sizeup.ui.pool import DEFAULT_TIME_LIMIT_S
    except ImportError as e:
        raise ConfigError(f"sizeup ui needs the web extra ({e.name} is missing): pip install 'sizeup[ui]'") from None
    wildcard = host in ("0.0.0.0", "::")
    if not loopback:
        print(f"sizeup ui: warning: binding {host}: anyone who can reach this address can use the UI (it has no "
              "login); Host names accepted: " + ", ".join(["127.0.0.1", "localhost", "[::1]",
                                                           *([] if wildcard else [host]), *extra]), file=sys.stderr)
    shown = LOCALHOST if wildcard else (f"[{host}]" if ":" in host else host)
    url = f"http://{shown}:{args.port}/"
    print(f"sizeup ui: serving on {url} (Ctrl-C to stop)", file=sys.stderr)
    if not args.no_browser:
        import threading
        import webbrowser

        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    app = create_app(hosts=(*([] if wildcard else [host]), *extra),
                     time_limit_s=args.time_limit or DEFAULT_TIME_LIMIT_S)
    uvicorn.run(app, host=host, port=args.port, log_level="warning", timeout_graceful_shutdown=3)  # then workers stop
    return 0
