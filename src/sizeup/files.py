"""Opening a file a user names: the one place sizeup turns a path from the command line, a scenario or a
catalog folder into bytes.

A path must name a regular file. It is opened without blocking (a FIFO with no writer would otherwise
hang the open), and what it is and how large it is are read from the open descriptor (`fstat`), so a
name swapped between a check and the open, or a link to /dev/zero or a terminal, is seen for what it
is. Reads are bounded by the caller's limit; a file that grows, shrinks or is rewritten while it is read
is refused rather than half read. Every refusal is one line naming the path and what was expected, as
the caller's error class (`ConfigError` for configs and scenarios, `CatalogError` for catalog files,
`IngestError` for model files).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from sizeup.errors import SizeupError
from sizeup.units import KIB

__all__ = ["OpenedFile", "open_regular", "read_regular", "check_unchanged", "user_path", "write_file"]

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def user_path(text: str | os.PathLike) -> Path:
    """A path as a user typed it, `~` and `~user` expanded as the shell does. A `~user` that names no user is left
    as it is (the rule of `os.path.expanduser`; `Path.expanduser` raises RuntimeError), so the caller refuses it
    as a path that does not exist."""
    return Path(os.path.expanduser(os.fspath(text)))


@dataclass(frozen=True, slots=True)
class OpenedFile:
    """An open regular file and what `fstat` said of it when it was opened."""

    fh: BinaryIO
    size: int
    mtime_ns: int
    path: Path
    what: str


def _larger_than(limit: int) -> str:
    return f"larger than {limit // KIB:,} KiB (limit {limit:,} bytes)"


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "of an unknown kind")


@contextlib.contextmanager
def open_regular(path: str | Path, *, what: str, error: type[SizeupError], limit: int | None = None
                 ) -> Iterator[OpenedFile]:
    """Open `path` for reading when it is a regular file of at most `limit` bytes (None: any size).
    `what` names the file in errors ("config file", "model file"); `error` is the class raised."""
    path = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise error(f"{what} {str(path)!r} does not exist") from None
    except OSError as e:
        raise error(f"{what} {str(path)!r} cannot be read ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{what} {str(path)!r} is not a regular file ({_kind(st.st_mode)}): expected a file")
        if limit is not None and st.st_size > limit:
            raise error(f"{what} {str(path)!r} has {st.st_size:,} bytes, {_larger_than(limit)}")
    except BaseException:
        os.close(fd)
        raise
    with _blocking_file(fd, "rb") as fh:
        yield OpenedFile(fh=fh, size=st.st_size, mtime_ns=st.st_mtime_ns, path=path, what=what)


def check_unchanged(opened: OpenedFile, error: type[SizeupError]) -> None:
    """Refuse a file whose size or modification time changed since it was opened (rewritten while read)."""
    try:
        st = os.fstat(opened.fh.fileno())
    except OSError as e:
        raise error(f"{opened.what} {str(opened.path)!r} cannot be read ({e.strerror})") from None
    if st.st_size != opened.size or st.st_mtime_ns != opened.mtime_ns:
        raise error(f"{opened.what} {str(opened.path)!r} changed while it was read ({opened.size:,} bytes when "
                    f"opened, {st.st_size:,} now): expected a file that stays put; read it again once it is written")


def read_regular(path: str | Path, *, what: str, error: type[SizeupError], limit: int) -> bytes:
    """The bytes of regular file `path`, at most `limit` of them, refused if it changes while read."""
    with open_regular(path, what=what, error=error, limit=limit) as opened:
        try:
            raw = opened.fh.read(limit + 1)
        except OSError as e:
            raise error(f"{what} {str(path)!r} cannot be read ({e.strerror})") from None
        if len(raw) > limit:  # grew after it was opened (or a file that reports no size, as /proc's do)
            raise error(f"{what} {str(path)!r} grew while it was read: {_larger_than(limit)}")
        if len(raw) != opened.size and opened.size:
            raise error(f"{what} {str(path)!r} changed while it was read ({opened.size:,} bytes when opened, "
                        f"{len(raw):,} read): expected a file that stays put")
        check_unchanged(opened, error)
        return raw


def _blocking_file(fd: int, mode: str) -> BinaryIO:
    """The file object of `fd`, opened without blocking and now switched back to blocking reads and writes; `fd`
    is closed if that fails."""
    try:
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, mode)
    except BaseException:
        os.close(fd)
        raise


def write_file(path: str | os.PathLike, data: str | bytes, *, what: str, error: type[SizeupError]) -> Path:
    """Write `data` (text as UTF-8) to the file a user named, created or truncated; the path written. The open does
    not block: a FIFO nothing reads, or a device with no one behind it (/dev/tty without a terminal), is refused
    at once instead of waiting forever; a FIFO with a reader (`--out /dev/stdout | less`) and /dev/null take the
    data as a file would. Every failure is one line naming `what` ("--out") and the path."""
    path = user_path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) \
        | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as e:
        if e.errno == errno.ENXIO:
            raise error(f"{what} {str(path)!r} is a FIFO or device that nothing reads: expected a file") from None
        raise error(f"{what} {str(path)!r}: cannot write ({e.strerror})") from None
    try:
        with _blocking_file(fd, "wb") as fh:
            fh.write(raw)
    except OSError as e:
        raise error(f"{what} {str(path)!r}: cannot write ({e.strerror})") from None
    return path
