"""The one opener of user-named files (sizeup/files.py): regular files only, never a wait on a FIFO, sizes read
from the open descriptor, bounded reads, and a file that changes while it is read refused."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from sizeup.errors import CatalogError, ConfigError
from sizeup.files import check_unchanged, open_regular, read_regular


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
