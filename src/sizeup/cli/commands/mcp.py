"""`sizeup mcp`: an MCP server over stdio exposing estimate, fit, compare, train and plan (needs sizeup[mcp])."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mcp", help="an MCP server over stdio: estimate, fit, compare, train and plan for agents "
                                   "(needs sizeup[mcp])",
                       description="Speaks the Model Context Protocol on stdin / stdout until the client closes them: "
                                   "configure your assistant to run 'sizeup mcp'. See docs/mcp.md.")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sizeup.errors import ConfigError

    try:
        from sizeup.mcp.server import serve
        import mcp.server.lowlevel  # noqa: F401
    except ImportError as e:
        raise ConfigError(f"sizeup mcp needs the MCP Python SDK: pip install 'sizeup[mcp]' ({e})") from None
    serve()
    return 0
