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
import os
import sys
from collections.abc import Iterable, Iterator
from typing import TextIO

from sizeup.errors import SizeupError
from sizeup.escape import terminal

__all__ = ["TerminalSafeStream", "safe_output", "raw_stream"]


class TerminalSafeStream:
    """A text stream that escapes control characters (newline and tab kept) before writing to `raw`."""

    def __init__(self, raw: TextIO) -> None:
        self.raw_stream = raw

    def write(self, text: str) -> int:
        try:
            self.raw_stream.write(terminal(text))
        except BrokenPipeError:  # the reader left (`| head`): the boundary ends quietly
            raise
        except OSError as e:  # a full disk (`> /dev/full`), an I/O error
            raise self._cannot_write(e) from None
        return len(text)

    def flush(self) -> None:
        try:
            self.raw_stream.flush()
        except BrokenPipeError:
            raise
        except OSError as e:
            raise self._cannot_write(e) from None

    def _cannot_write(self, e: OSError) -> SizeupError:
        """The one-line error of a stream that cannot be written; what it still buffers goes to /dev/null, so that
        the interpreter's last flush at exit does not print a second error."""
        name = getattr(self.raw_stream, "name", "the output")
        with contextlib.suppress(OSError, ValueError, AttributeError):
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self.raw_stream.fileno())
            os.close(null)
        return SizeupError(f"cannot write to {name} ({e.strerror or e}): expected somewhere the output fits")

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
