"""The UI's refusals and the check every worker job makes of the command line it is given.

A request becomes the command line it would be on the CLI (`forms.py`): request values only ever become
`--flag=value` options of the flags listed there, and a model or scenario positional after `--` (never read as an
option). `check_argv` refuses any other command and any option that reads or writes a file, before a worker reads
the argv with the CLI's parser and calls `sizeup.api` (ui/jobs.py). What a name may resolve to is decided by
`sizeup.sources` under the worker's policy, not here.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["MAX_UPLOAD_BYTES", "MAX_ONNX_BYTES", "UiError", "check_argv", "scrub_paths"]

MAX_UPLOAD_BYTES = 8 * 1024 * 1024
"""Largest upload read: a config.json, a scenario YAML, or the first 8 MiB of a .safetensors / .gguf
file (its header; the browser sends only that slice)."""
MAX_ONNX_BYTES = 128 * 1024 * 1024
"""Largest ONNX graph read (the FLOPs page): the whole file, weights included (ResNet-50 in fp32 is about 98 MB;
a graph saved with external data needs only its .onnx part, which holds the shapes)."""

COMMANDS = ("estimate", "train", "plan", "runs", "compare", "fit", "flops")
"""The commands whose flags the UI reads; `measure`, `load`, `calibrate` … never."""
_REFUSED_OPTIONS = ("--catalog", "--db", "--calibration", "--sla", "--plots", "--debug", "--spool", "--out",
                    "--deploy", "--plot", "--format")


class UiError(Exception):
    """A request refused or failed: `message` is one line (absolute paths shown by name only), `status`
    the HTTP code."""

    def __init__(self, message: str, status: int = 400):
        message = scrub_paths(" ".join(str(message).split()))
        super().__init__(message)
        self.message = message
        self.status = status


def check_argv(argv: list[str], folder: Path) -> None:
    """Refuse an argv the UI never builds: another command, or an option that names a file (`folder`, the UI's
    own, is where its uploads are; they come as the positional)."""
    if not argv or argv[0] not in COMMANDS:
        raise UiError(f"command {argv[:1]!r}: the UI runs only {', '.join(COMMANDS)}", 500)
    options = argv[1:argv.index("--")] if "--" in argv else argv[1:]
    for arg in options:
        name = arg.partition("=")[0]
        if name in _REFUSED_OPTIONS:
            raise UiError(f"option {name}: never built from a request", 500)


_ABSOLUTE = re.compile(r"(?<![\w.~:/\\-])(?:/[\w.@+%=-]+){2,}/?|\b[A-Za-z]:\\[^\s'\"]+")


def scrub_paths(text: str) -> str:
    """`text` with every absolute path (two parts or more) cut to its last part: a message shows which
    file, never where the server keeps it ('/tmp/sizeup-ui-x/uploads/ab/config.json' -> 'config.json')."""
    return _ABSOLUTE.sub(lambda m: re.split(r"[/\\]", m.group().rstrip("/\\"))[-1] or "/", text)
