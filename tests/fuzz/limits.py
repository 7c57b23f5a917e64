"""What every fuzz test holds an example to: CPU time and resident memory."""

import contextlib
import os

CPU_LIMIT_S = 5.0
MEMORY_LIMIT_BYTES = 500 * 2**20
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
_baseline: list[int] = []


def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE_BYTES


@contextlib.contextmanager
def bounded():
    """One example: the process's resident memory after it stays within 500 MiB of where the fuzz began
    (after the first, warming call; a transient peak freed before the end is not seen)."""
    yield
    if not _baseline:
        _baseline.append(resident_bytes())
    grown = resident_bytes() - _baseline[0]
    assert grown < MEMORY_LIMIT_BYTES, f"resident memory grew by {grown / 2**20:.0f} MiB"
