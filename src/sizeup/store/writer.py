"""Who is writing a run: the identity of a process, stored with each run, and whether it is still alive.

A run killed with SIGKILL (or lost to a crash or a reboot) stays "running" in the store: nothing in the
process can run at that moment. Each run therefore records its writer — host name, process id, and on Linux
the boot id and the process's start time in clock ticks since boot, so that a process id reused after the
writer ended is not mistaken for it. A reader then tells a run still being written from an orphaned one.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

__all__ = ["current_writer", "writer_alive"]

_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def _boot_id() -> str | None:
    try:
        return _BOOT_ID.read_text().strip() or None
    except OSError:
        return None


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state letter, start time in clock ticks since boot) from /proc/PID/stat; None when unreadable."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    try:  # the command name (field 2) is in parentheses and may hold spaces: split after its last ')'
        rest = text[text.rindex(")") + 2:].split()
        return rest[0], int(rest[19])
    except (ValueError, IndexError):
        return None


def current_writer() -> dict:
    """This process's identity: {"host", "pid"} and, on Linux, {"boot_id", "start_ticks"}."""
    pid = os.getpid()
    writer: dict = {"host": socket.gethostname(), "pid": pid}
    stat = _proc_stat(pid)
    boot = _boot_id()
    if stat is not None and boot is not None:
        writer |= {"boot_id": boot, "start_ticks": stat[1]}
    return writer


def writer_alive(writer: object) -> bool | None:
    """True if the process is alive, False if it has ended, None when this machine cannot tell (another
    host, or no identity stored: a run written by an older sizeup)."""
    if not isinstance(writer, dict):
        return None
    pid = writer.get("pid")
    if writer.get("host") != socket.gethostname() or isinstance(pid, bool) or not isinstance(pid, int) or pid < 1:
        return None
    boot, start = writer.get("boot_id"), writer.get("start_ticks")
    if boot is not None and start is not None:
        here = _boot_id()
        if here is None:
            return None
        if here != boot:
            return False  # the machine rebooted since
        stat = _proc_stat(pid)
        return stat is not None and stat[1] == start and stat[0] not in ("Z", "X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return None
    return True
