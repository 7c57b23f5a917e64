"""Entry point of the `sizeup` command: the one place that turns a `SizeupError` into exit code 1."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from sizeup.errors import ConfigError, SizeupError

COMMANDS = ("flops", "roofline", "estimate", "train", "plan", "hw", "measure", "runs", "load", "watch")


class _Parser(argparse.ArgumentParser):
    """argparse with bad arguments reported as one line and exit code 1, as every other bad input."""

    def error(self, message: str):  # type: ignore[override]
        raise ConfigError(f"{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    from importlib import import_module

    parser = _Parser(
        prog="sizeup", description="How much compute a model needs, and which hardware is just enough.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:  # the measure module also registers calibrate and compare
        import_module(f"sizeup.cli.commands.{name}").register(sub)
    return parser


def emit_json(obj: object) -> None:
    """Print exactly one JSON object on stdout."""
    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return int(args.func(args) or 0)
    except SizeupError as e:
        message = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"sizeup: error: {message}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("sizeup: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
