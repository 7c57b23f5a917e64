"""The error hierarchy, and the one function that turns any exception into a one-line message.

Every bad input the user can give raises a `SizeupError` subclass. The library never prints or exits;
the CLI (`sizeup.cli.main`) and the web API call `describe_error` at their boundary and show its one
line: a `SizeupError` as it is (exit code 1), anything else as a bug in sizeup with the exception's type
and message and how to get the traceback (`--debug` or `SIZEUP_DEBUG=1`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sizeup.escape import terminal_line

__all__ = [
    "SizeupError",
    "CatalogError",
    "ConfigError",
    "IngestError",
    "MeasureError",
    "ResolveError",
    "ErrorReport",
    "EXIT_ERROR",
    "EXIT_NO_PLAN",
    "EXIT_INTERRUPTED",
    "debug_requested",
    "describe_error",
]

EXIT_ERROR = 1
"""Bad input, or a bug: one line on stderr."""
EXIT_NO_PLAN = 2
"""`sizeup plan`: the sheet was written, but no configuration meets the scenario's targets."""
EXIT_INTERRUPTED = 130
"""Ctrl-C (128 + SIGINT), as shells report it."""

DEBUG_ENV = "SIZEUP_DEBUG"
_MAX_MESSAGE_CHARS = 500


class SizeupError(Exception):
    """Base class of all errors a user can cause; the message is one line that names the value."""

    exit_code: int = EXIT_ERROR


class ConfigError(SizeupError):
    """A command-line value, scenario or option that is malformed or out of range."""


class CatalogError(SizeupError):
    """A hardware or offer data file that does not follow the schema."""


class ResolveError(SizeupError):
    """A name (device, model, offer) that matches nothing; the message lists the closest names."""


class IngestError(SizeupError):
    """A model that cannot be read or traced: missing file, no such factory, a rejected input."""


class MeasureError(SizeupError):
    """A measurement that cannot run: unknown local device, bad sweep values."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorReport:
    """What a boundary shows for an exception: one line, an exit code and an HTTP status."""

    message: str
    """One line, without the 'sizeup: error: ' prefix the CLI adds."""
    exit_code: int
    http_status: int
    """400 for bad input, 500 for a bug in sizeup."""
    bug: bool
    """True when sizeup itself failed (not a `SizeupError`): the traceback is worth reporting."""


# Exceptions that, escaping a reader, almost always mean an input beyond what sizeup can hold.
_INPUT_LIMITS: dict[type[BaseException], str] = {
    RecursionError: "the input is nested too deeply to read",
    MemoryError: "out of memory: the input is too large to hold",
    OverflowError: "a number in the input is too large",
    UnicodeDecodeError: "the input is not UTF-8 text",
}


def one_line(text: str, limit: int = _MAX_MESSAGE_CHARS) -> str:
    """The first non-empty line of `text`, cut to `limit` characters (control characters shown escaped)."""
    line = next((s.strip() for s in str(text).splitlines() if s.strip()), "")
    line = terminal_line(line)
    return line if len(line) <= limit else line[:limit - 1] + "…"


def debug_requested(argv: list[str] | tuple[str, ...] = ()) -> bool:
    """True with `--debug` among the arguments (before a `--`) or SIZEUP_DEBUG set to a true value."""
    if os.environ.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    for arg in argv:
        if arg == "--":
            return False
        if arg == "--debug":
            return True
    return False


def describe_error(exc: BaseException, *, context: str = "") -> ErrorReport:
    """The one-line report of `exc` for a boundary (CLI, web API). `context` names what was running,
    e.g. "sizeup estimate", for the bug line. Never raises."""
    if isinstance(exc, SizeupError):
        message = one_line(str(exc)) or type(exc).__name__
        return ErrorReport(message=message, exit_code=exc.exit_code, http_status=400, bug=False)
    detail = one_line(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, 300)
    where = f" in {context}" if context else ""
    how = f"rerun with --debug (or {DEBUG_ENV}=1) for the traceback"
    for kind, meaning in _INPUT_LIMITS.items():
        if isinstance(exc, kind):
            return ErrorReport(message=f"{meaning} ({detail}){where}; if the input is sound this is a bug in sizeup: "
                                       f"{how}", exit_code=EXIT_ERROR, http_status=400, bug=True)
    return ErrorReport(message=f"this is a bug in sizeup{where}: {detail}; {how} and report it",
                       exit_code=EXIT_ERROR, http_status=500, bug=True)
