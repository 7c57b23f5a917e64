"""The CLI's output boundary: while a command runs, stdout and stderr pass every write through
`sizeup.escape.terminal`, so a name read from a file (a GGUF `general.name`, a catalog device, a
scenario, a server's answer) cannot reach the terminal as an escape sequence or a carriage return,
whichever renderer or message printed it. JSON (`--json`) is unchanged: `json.dumps` writes no raw
control character.

The wrapped streams say they are not terminals (`isatty()` is False: control sequences do not pass);
the one writer that needs them, the progress bar, draws on `raw_stream(sys.stderr)`.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator
from typing import TextIO

from sizeup.escape import terminal

__all__ = ["TerminalSafeStream", "safe_output", "raw_stream"]


class TerminalSafeStream:
    """A text stream that escapes control characters (newline and tab kept) before writing to `raw`."""

    def __init__(self, raw: TextIO) -> None:
        self.raw_stream = raw

    def write(self, text: str) -> int:
        self.raw_stream.write(terminal(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str):  # flush, fileno, encoding, …
        return getattr(self.raw_stream, name)


def raw_stream(stream: TextIO) -> TextIO:
    """The stream under a TerminalSafeStream (itself otherwise)."""
    return getattr(stream, "raw_stream", stream)


@contextlib.contextmanager
def safe_output() -> Iterator[None]:
    """sys.stdout and sys.stderr wrapped in TerminalSafeStream for the duration; restored afterwards."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TerminalSafeStream(raw_stream(out)), TerminalSafeStream(raw_stream(err))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
