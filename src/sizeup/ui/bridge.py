"""The UI's one way to compute: a CLI command run in a worker process, its `--json` output taken as is.

`cli_run(["estimate", "--device=4090", "--json", "--", "llama-3.1-8b"])` runs inside a worker (ui/worker.py,
one job at a time, so redirecting stdout is safe there) and returns what the command printed, so /api/…
equals the CLI by construction. A bad input comes back as `UiError` with the CLI's own one-line message.

Request values only ever become `--flag=value` options of the flags listed in `forms.py`, and a model
or scenario positional after `--` (never read as an option). `check_argv` refuses any other command and
any option that reads or writes a file, except the UI's own `--out` / `--deploy` inside its folder.
What a name may resolve to is decided by `sizeup.sources` under the worker's policy, not here.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

__all__ = ["MAX_UPLOAD_BYTES", "UiError", "check_argv", "cli_run", "error_line", "parse_json", "scrub_paths",
           "with_flags"]

MAX_UPLOAD_BYTES = 8 * 1024 * 1024
"""Largest upload read: a config.json, a scenario YAML, or the first 8 MiB of a .safetensors / .gguf
file (its header; the browser sends only that slice)."""

COMMANDS = ("estimate", "train", "plan", "runs", "compare")
"""The commands the UI runs; `measure`, `flops`, `load`, `calibrate` … never."""
_FILE_OPTIONS = ("--out", "--deploy")
"""Options that write a file: built by the UI itself, always inside its own folder."""
_REFUSED_OPTIONS = ("--catalog", "--db", "--calibration", "--sla", "--plots", "--debug", "--spool")


class UiError(Exception):
    """A request refused or failed: `message` is one line (absolute paths shown by name only), `status`
    the HTTP code."""

    def __init__(self, message: str, status: int = 400):
        message = scrub_paths(" ".join(str(message).split()))
        super().__init__(message)
        self.message = message
        self.status = status


def with_flags(argv: list[str], *flags: str) -> list[str]:
    """`argv` with `flags` added before its `--` (the positional after it stays a positional)."""
    cut = argv.index("--") if "--" in argv else len(argv)
    return [*argv[:cut], *flags, *argv[cut:]]


def check_argv(argv: list[str], folder: Path) -> None:
    """Refuse an argv the UI never builds: another command, a file option, or an output outside `folder`."""
    if not argv or argv[0] not in COMMANDS:
        raise UiError(f"command {argv[:1]!r}: the UI runs only {', '.join(COMMANDS)}", 500)
    options = argv[1:argv.index("--")] if "--" in argv else argv[1:]
    for arg in options:
        name, _, value = arg.partition("=")
        if name in _REFUSED_OPTIONS:
            raise UiError(f"option {name}: never built from a request", 500)
        if name in _FILE_OPTIONS:
            target = Path(value).resolve()
            if folder.resolve() not in target.parents:
                raise UiError(f"option {name}: only inside the UI's own folder", 500)


def cli_run(argv: list[str]) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of `sizeup ARGV`, run in this process through the CLI's boundary.
    Only a UI worker calls it (stdout is redirected process-wide)."""
    from sizeup.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse --help / --version: not reachable from the UI's argv
            code = int(e.code or 0) if not isinstance(e.code, str) else 1
    return code, out.getvalue(), err.getvalue()


def error_line(stderr: str, default: str = "the request failed") -> str:
    """The one-line message of a failed CLI run (its last stderr line, without the "sizeup: error: " prefix)."""
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    line = lines[-1] if lines else default
    return line.removeprefix("sizeup: error: ")


def parse_json(command: str, code: int, out: str, err: str, ok_codes: tuple[int, ...] = (0,)) -> dict:
    """The JSON object a CLI run printed; `UiError` with its message when it failed."""
    if code not in ok_codes or not out.strip():
        raise UiError(error_line(err))
    try:
        return json.loads(out)
    except ValueError:
        raise UiError(f"sizeup {command} printed no JSON", 500) from None


_ABSOLUTE = re.compile(r"(?<![\w.~:/\\-])(?:/[\w.@+%=-]+){2,}/?|\b[A-Za-z]:\\[^\s'\"]+")


def scrub_paths(text: str) -> str:
    """`text` with every absolute path (two parts or more) cut to its last part: a message shows which
    file, never where the server keeps it ('/tmp/sizeup-ui-x/uploads/ab/config.json' -> 'config.json')."""
    return _ABSOLUTE.sub(lambda m: re.split(r"[/\\]", m.group().rstrip("/\\"))[-1] or "/", text)
