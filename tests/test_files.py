"""The one opener of user-named files (sizeup/files.py): regular files only, never a wait on a FIFO, sizes read
from the open descriptor, bounded reads, and a file that changes while it is read refused."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from sizeup.errors import CatalogError, ConfigError
from sizeup.files import check_unchanged, open_regular, read_regular, user_path, write_file


def read(path, limit=1024):
    return read_regular(path, what="test file", error=ConfigError, limit=limit)


def within(seconds: float, call):
    """`call()`'s result or exception, failing the test (not hanging it) when it takes longer than `seconds`."""
    box: dict = {}

    def run():
        try:
            box["value"] = call()
        except BaseException as e:  # noqa: BLE001  handed back to the test
            box["error"] = e

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds} s (blocked on the file?)"
    if "error" in box:
        raise box["error"]
    return box["value"]


def test_a_regular_file_is_read(tmp_path):
    path = tmp_path / "a.json"
    path.write_bytes(b"{}")
    assert read(path) == b"{}"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_with_no_writer_is_refused_at_once(tmp_path):
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    with pytest.raises(ConfigError, match=r"test file '.*pipe.json' is not a regular file \(a FIFO\)"):
        within(5, lambda: read(path))


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_link_to_a_device_is_refused_not_read(tmp_path):
    link = tmp_path / "zero.json"
    link.symlink_to("/dev/zero")
    with pytest.raises(ConfigError, match=r"zero.json' is not a regular file \(a character device\)"):
        within(5, lambda: read(link, limit=2**40))


def test_a_folder_and_a_missing_file_are_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"is not a regular file \(a folder\)"):
        read(tmp_path)
    with pytest.raises(ConfigError, match="'.*absent.json' does not exist"):
        read(tmp_path / "absent.json")


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_bytes(b"x" * 2049)
    with pytest.raises(ConfigError, match=r"has 2,049 bytes, larger than 2 KiB \(limit 2,048 bytes\)"):
        read(path, limit=2048)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="no /proc")
def test_a_file_that_reports_no_size_is_read_only_up_to_the_limit():
    """/proc files say 0 bytes and hold more: the read stops at the limit."""
    with pytest.raises(ConfigError, match="grew while it was read"):
        read("/proc/self/maps", limit=16)


def test_a_file_rewritten_while_open_is_refused(tmp_path):
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + b"\0" * 60)
    with open_regular(path, what="model file", error=CatalogError) as opened:
        with open(path, "ab") as other:  # another process appends while sizeup reads
            other.write(b"\1" * 8)
        with pytest.raises(CatalogError, match=r"changed while it was read \(64 bytes when opened, 72 now\)"):
            check_unchanged(opened, CatalogError)


# ---- writing (write_file) and paths (user_path) ---------------------------------------------------------------------

def test_a_file_is_written_created_or_truncated(tmp_path):
    path = tmp_path / "out.md"
    path.write_text("old contents, longer than the new")
    assert write_file(path, "new", what="--out", error=ConfigError) == path
    assert path.read_text() == "new"


def test_a_fifo_nothing_reads_is_refused_at_once_not_waited_on(tmp_path):
    path = tmp_path / "fifo"
    os.mkfifo(path)
    with pytest.raises(ConfigError, match="is a FIFO or device that nothing reads: expected a file"):
        within(5, lambda: write_file(path, "x", what="--out", error=ConfigError))


def test_a_fifo_with_a_reader_takes_the_data(tmp_path):
    path = tmp_path / "fifo"
    os.mkfifo(path)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(open(path, "rb").read()), daemon=True)
    reader.start()
    for _ in range(100):  # the reader's open must come first: a FIFO without one is refused
        try:
            write_file(path, "hello", what="--out", error=ConfigError)
            break
        except ConfigError:
            threading.Event().wait(0.05)
    reader.join(5)
    assert got == [b"hello"]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_device_and_a_folder_are_one_line_each(tmp_path):
    link = tmp_path / "full.xlsx"
    link.symlink_to("/dev/full")
    with pytest.raises(ConfigError, match=r"--out '.*full.xlsx': cannot write \(No space left on device\)"):
        write_file(link, b"x" * 100_000, what="--out", error=ConfigError)
    with pytest.raises(ConfigError, match="cannot write"):
        write_file(tmp_path, "x", what="--out", error=ConfigError)


def test_a_tilde_user_that_does_not_exist_is_left_as_typed():
    assert user_path("~no-such-user-27/x.sqlite") == Path("~no-such-user-27/x.sqlite")
    assert user_path("~/x") == Path.home() / "x"
