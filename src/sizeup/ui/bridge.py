"""The UI's one way to compute: run a CLI command in-process and take its `--json` output.

`cli_json(["estimate", "llama-3.1-8b", "--device", "4090", "--json"])` returns exactly the object the
command prints, so /api/… equals the CLI by construction. A bad input comes back as `UiError` with
the CLI's own one-line message. Commands run one at a time (stdout is redirected process-wide).

Safety: a browser may name presets and catalog devices only. `check_model` refuses file paths and
`FILE.py:FACTORY` targets; an upload is stored (size-limited) in the server's own temp dir and only
that path is handed to the CLI. Options that read arbitrary files (--catalog, --db, --calibration,
--out) are never built from request values.
"""

from __future__ import annotations

import contextlib
import io
import json
import threading
from pathlib import Path

__all__ = ["MAX_UPLOAD_BYTES", "UiError", "check_model", "cli_json", "cli_run", "error_line"]

MAX_UPLOAD_BYTES = 8 * 1024 * 1024
"""Largest upload read: a config.json, a scenario YAML, or the first 8 MiB of a .safetensors / .gguf
file (its header; the browser sends only that slice)."""

_LOCK = threading.Lock()


class UiError(Exception):
    """A request the CLI refused: `message` is its one line, `status` the HTTP code."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.message = message
        self.status = status


def cli_run(argv: list[str]) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of `sizeup ARGV`, run in this process through the CLI's boundary."""
    from sizeup.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with _LOCK, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse --help / --version: not reachable from the UI's argv
            code = int(e.code or 0)
    return code, out.getvalue(), err.getvalue()


def error_line(stderr: str, default: str = "the request failed") -> str:
    """The one-line message of a failed CLI run (its last stderr line, without the "sizeup: error: " prefix)."""
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    line = lines[-1] if lines else default
    return line.removeprefix("sizeup: error: ")


def cli_json(argv: list[str], ok_codes: tuple[int, ...] = (0,)) -> dict:
    """The JSON object `sizeup ARGV` prints (ARGV includes --json / --format json)."""
    code, out, err = cli_run(argv)
    if code not in ok_codes or not out.strip():
        raise UiError(error_line(err))
    try:
        return json.loads(out)
    except ValueError:
        raise UiError(f"sizeup {argv[0]} printed no JSON") from None


_PATH_SUFFIXES = (".json", ".safetensors", ".gguf", ".onnx", ".py", ".yaml", ".yml", ".pt", ".bin")


def check_model(name: str) -> str:
    """A model named from the browser: a preset or a Hugging Face id, never a path or code."""
    name = (name or "").strip()
    if not name:
        raise UiError("model: expected a preset name (e.g. llama-3.1-8b) or an uploaded file")
    if len(name) > 200 or ":" in name or "\\" in name or name.startswith((".", "/", "~", "-")) \
            or name.lower().endswith(_PATH_SUFFIXES) or ".." in name:
        raise UiError(f"model {name[:80]!r}: expected a preset name or Hugging Face id; files are uploaded, "
                      "and the UI runs no user code")
    if Path(name).exists():
        raise UiError(f"model {name!r}: names a local path; upload the file instead")
    return name
