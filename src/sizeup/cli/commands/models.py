"""`sizeup models [QUERY]`: the model presets, listed and searched."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="the model presets: list and search by name, Hugging Face id or family",
                       description="QUERY words must all appear in a preset's id, Hugging Face id, aliases or family "
                                   "(case and punctuation ignored): 'sizeup models llama 8b', 'sizeup models qwen3'.")
    p.add_argument("query", nargs="*", help="words to search for (default: every preset)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sizeup.api import models
    from sizeup.cli.main import emit_json

    result = models(" ".join(args.query) or None)
    if args.json:
        emit_json(result.to_dict())
        return 0
    if not result.models:
        print(f"no preset matches {result.query!r} (see 'sizeup models'; any config.json also works as MODEL)")
        return 0
    from sizeup.report.terminal import render_table

    rows = [[m.id, m.family, m.kind, f"{m.params / 1e9:,.2f}B" + (f" ({m.active_params / 1e9:,.1f}B active)"
                                                                  if m.moe else ""),
             "" if m.context is None else f"{m.context:,}", m.hf_id or ""] for m in result.models]
    print(render_table(["preset", "family", "kind", "parameters", "context", "Hugging Face id"], rows))
    return 0
