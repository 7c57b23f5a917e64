"""`sizeup ui [--port N] [--host 127.0.0.1] [--no-browser]`: the local web app (extra `sizeup[ui]`)."""

from __future__ import annotations

import argparse
import sys

from sizeup.units import number_flag

LOCALHOST = "127.0.0.1"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ui", help="a local web app: estimate, compare, train, plan and runs in the browser "
                                  "(needs sizeup[ui])",
                       description="Serves the estimator and planner on http://127.0.0.1:PORT. It runs no user code "
                                   "and writes only into its own temp dir.")
    p.add_argument("--port", type=number_flag(integer=True, minimum=1, maximum=65535), default=8765,
                   help="port (default 8765)")
    p.add_argument("--host", default=LOCALHOST, help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser tab")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sizeup.errors import ConfigError

    try:
        import uvicorn

        from sizeup.ui.app import create_app
    except ImportError as e:
        raise ConfigError(f"sizeup ui needs the web extra ({e.name} is missing): pip install 'sizeup[ui]'") from None
    if args.host != LOCALHOST:
        print(f"sizeup ui: warning: binding {args.host}: anyone who can reach this address can use the UI "
              "(it has no login)", file=sys.stderr)
    url = f"http://{LOCALHOST if args.host in (LOCALHOST, '0.0.0.0') else args.host}:{args.port}/"
    print(f"sizeup ui: serving on {url} (Ctrl-C to stop)", file=sys.stderr)
    if not args.no_browser:
        import threading
        import webbrowser

        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    uvicorn.run(create_app(), host=args.host, port=args.port, log_level="warning")
    return 0
