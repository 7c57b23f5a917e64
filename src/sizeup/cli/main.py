"""Entry point of the `sizeup` command, and its one error boundary.

Start-up: the parser knows every command by a static table (name, module, one-line help) and imports
only the module of the command being run, whose `register(sub)` adds its full parser. `sizeup --help`
lists the table without importing any command.

Errors: `main` turns every exception into one line on stderr — `sizeup: error: …` — through
`sizeup.errors.describe_error`: exit code 1 for bad input (a `SizeupError`) and for bugs (with how to
get the traceback: `--debug` or `SIZEUP_DEBUG=1`), 2 from `sizeup plan` when no configuration meets the
targets, 130 on Ctrl-C. Never a bare traceback.

Output: while a command runs, stdout and stderr escape control characters (`cli/output.py`), so no name
read from a file or a server reaches the terminal as an escape sequence.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from sizeup.errors import EXIT_INTERRUPTED, ConfigError, debug_requested, describe_error

__all__ = ["COMMANDS", "build_parser", "emit_json", "json_ready", "json_text", "main", "parse_command", "run_guarded"]

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module under sizeup.cli.commands, one-line help: the same text the module registers)
    "flops": ("flops", "count FLOPs, bytes and peak memory of a PyTorch model"),
    "roofline": ("roofline", "price a PyTorch model's ops on one or more devices"),
    "estimate": ("estimate", "memory and speed of a transformer from its config, on a device"),
    "fit": ("fit", "which models run on a device, at which format and speed, fastest first"),
    "models": ("models", "the model presets: list and search by name, Hugging Face id or family"),
    "train": ("train", "memory, step time, MFU and cost of training or fine-tuning a transformer"),
    "plan": ("plan", "the cheapest setup that meets the SLA or deadline: the compute requirement sheet"),
    "hw": ("hw", "the hardware catalog: devices, cloud offers, this machine"),
    "measure": ("measure", "run a model on this machine over batch sizes and store every point"),
    "calibrate": ("measure", "fit this device's efficiency from micro-benchmarks and stored runs"),
    "compare": ("measure", "predicted against measured, term by term, for a stored run"),
    "runs": ("runs", "saved measurement runs: list, show, export, sync, import"),
    "sweep": ("sweep", "a measurement sweep as Kubernetes Indexed Jobs (Kueue) or Slurm arrays"),
    "load": ("load", "load-test an OpenAI-compatible (or plain HTTP) endpoint"),
    "serve-model": ("load", "a small OpenAI-compatible server on 127.0.0.1 (tests and demos)"),
    "watch": ("watch", "watch a process's memory (does it leak?) or, with --util, why it is slow"),
    "mcp": ("mcp", "an MCP server over stdio: estimate, fit, compare, train and plan for agents (needs sizeup[mcp])"),
    "ui": ("ui", "a local web app: estimate, compare, train, plan and runs in the browser (needs sizeup[ui])"),
}


class _Parser(argparse.ArgumentParser):
    """argparse with bad arguments reported as one line and exit code 1, as every other bad input."""

    def error(self, message: str):  # type: ignore[override]
        raise ConfigError(f"{message} (see '{self.prog} --help')")


def _version() -> str:
    from sizeup import __version__

    return __version__


def _command_of(argv: Sequence[str]) -> str | None:
    """The command word: the first argument that is not an option (the top level takes no values)."""
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg
    return None


def build_parser(command: str | None = None, *, others: bool = True) -> argparse.ArgumentParser:
    """The parser; the full parser of `command` only (its module imported), the others listed by name
    (`others=False`: not at all, for an argv that starts with `command`: nothing else can be parsed or shown then).
    `command=None` lists every command; `command="*"` registers them all (tests, docs)."""
    from importlib import import_module

    parser = _Parser(
        prog="sizeup", description="How much compute a model needs, and which hardware is just enough.",
        epilog="Errors are one line; add --debug (or set SIZEUP_DEBUG=1) to see the traceback of a bug.")
    parser.add_argument("--debug", action="store_true", help="print the traceback when sizeup itself fails")
    parser.add_argument("--version", action="version", version=f"sizeup {_version()}",
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    wanted = {m for m, _ in COMMANDS.values()} if command == "*" else {COMMANDS[command][0]} \
        if command in COMMANDS else set()
    for name, (module, help_text) in COMMANDS.items():
        if name in sub.choices:
            continue
        if module in wanted:  # the module registers all of its commands (measure: measure, calibrate, compare)
            import_module(f"sizeup.cli.commands.{module}").register(sub)
            wanted.discard(module)
        if name not in sub.choices and (others or command not in COMMANDS):
            sub.add_parser(name, help=help_text, add_help=False)
    _name_number_flags(parser)
    return parser


def _name_number_flags(parser: argparse.ArgumentParser) -> None:
    """Give each `units.number_flag` converter its flag's name, so that a bad value is the one line
    `--batch -2: expected a positive integer …` (a ConfigError, which argparse lets through)."""
    from sizeup.units import named_number_flag

    for action in parser._actions:
        checks = getattr(action.type, "checks", None)
        if checks is not None:
            action.type = named_number_flag(action.option_strings[-1] if action.option_strings else action.dest,
                                            checks)
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _name_number_flags(child)


def _refuse_empty_values(argv: Sequence[str]) -> None:
    """`--gpus=--`: argparse drops the '--' and hands the command an empty list instead of a value."""
    for arg in argv:
        if arg == "--":
            return
        flag, sep, value = arg.partition("=")
        if sep and flag.startswith("--") and value == "--":
            raise ConfigError(f"{arg}: '--' is not a value for {flag} (see 'sizeup --help')")


def parse_command(argv: Sequence[str]) -> argparse.Namespace:
    """`argv` (a command and its flags, no `--debug`) read exactly as `sizeup ARGV` reads it: each flag through its
    converter, an empty value refused, the pairs a command declares exclusive refused (`cli.flags.exclusive`).
    `main` runs the namespace's command; the web UI passes it to `sizeup.api` itself (ui/jobs.py), so the same
    text means the same value on both faces."""
    from sizeup.cli.flags import check_exclusive

    _refuse_empty_values(argv)
    command = _command_of(argv)
    # with the command first, the top level sees no option (its --help lists every command) and no other command
    args = build_parser(command, others=not argv or argv[0] != command).parse_args(list(argv))
    check_exclusive(args)  # flag pairs each command declares with cli.flags.exclusive
    return args


def emit_json(obj: object) -> None:
    """Print exactly one JSON object on stdout; a NaN or infinite figure is written as null (unknown), as
    JSON has no such numbers and strict parsers (browsers, the web UI's responses) refuse them."""
    sys.stdout.write(json_text(obj))


def json_text(obj: object) -> str:
    """The text `emit_json` prints (the web UI's JSON downloads are the same)."""
    import json  # not for `sizeup --help`

    return json.dumps(json_ready(obj), indent=2, default=str) + "\n"


def json_ready(obj: object) -> object:
    """`obj` with every NaN or infinite float as None: what `--json` prints (the MCP server answers the same)."""
    if isinstance(obj, float):
        return obj if obj == obj and obj not in (float("inf"), float("-inf")) else None
    if isinstance(obj, dict):
        return {k: json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_ready(v) for v in obj]
    return obj


def run_guarded(func: Callable[[], int | None], *, context: str = "sizeup", debug: bool = False,
                json_errors: bool = False) -> int:
    """Run `func` inside the error boundary: its return value as the exit code, or one line on stderr
    for any exception (the traceback too when `debug`); with `json_errors` (the command was given
    --json) also one JSON object {"error": {...}} on stdout, so a script reading stdout can parse the
    failure. For callers other than `main` (scripts, the UI launcher) that want the CLI's behaviour."""
    try:
        return int(func() or 0)
    except KeyboardInterrupt:
        print("sizeup: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `sizeup … | head`: the reader left; not an error
        return 0
    except SystemExit:  # --help / --version
        raise
    except BaseException as e:  # noqa: BLE001 — the boundary: every exception becomes one line
        report = describe_error(e, context=context)
        if debug:
            import traceback

            traceback.print_exc(file=sys.stderr)
        print(f"sizeup: error: {report.message}", file=sys.stderr)
        if json_errors:
            emit_json({"error": {"message": report.message, "exit_code": report.exit_code, "command": context}})
        return report.exit_code


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = debug_requested(argv)
    if "--debug" in argv:  # accepted anywhere before `--`, for every command
        cut = argv.index("--") if "--" in argv else len(argv)
        argv = [a for a in argv[:cut] if a != "--debug"] + argv[cut:]
    command = _command_of(argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    json_errors = any(a == "--json" or a.startswith("--json=") for a in argv[:cut])
    context = f"sizeup {command}" if command in COMMANDS else "sizeup"

    def run() -> int:
        args = parse_command(argv)
        return args.func(args)

    from sizeup.cli.output import safe_output

    with safe_output():  # whatever a command prints passes sizeup.escape.terminal
        return run_guarded(run, context=context, debug=debug, json_errors=json_errors)


if __name__ == "__main__":
    sys.exit(main())
