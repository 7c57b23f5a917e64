"""A bounded memo keyed by the identity of objects that cannot be hashed (ledgers, devices, efficiencies: dataclasses
holding lists and dicts), for the pure pricing functions a plan calls with the same objects many times.

An entry holds its key objects, so none of their ids is reused while it is kept, and is returned only for the very
same objects and an equal `version` (a ledger's ops as a tuple of frozen records, `Ledger.version`: a ledger changed
in any way after it was priced, an op added, replaced or removed, is priced again; a count would miss a replaced
op). The oldest entry goes first once `kept` are held. `get` and `put` hold a lock: the API may be called from
threads sharing one memo (a check-then-evict or a read racing an eviction would otherwise interleave).
"""

from __future__ import annotations

import threading

__all__ = ["IdentityMemo"]


class IdentityMemo:
    """At most `kept` results, each keyed by a tuple of objects (compared with `is`) and a version (with `==`)."""

    def __init__(self, kept: int) -> None:
        self.kept = kept
        self._entries: dict[tuple[int, ...], tuple[tuple, object, object]] = {}
        self._lock = threading.Lock()

    def get(self, objects: tuple, version: object = None) -> object:
        """The value kept for exactly these objects at this version, else None."""
        with self._lock:
            entry = self._entries.get(tuple(map(id, objects)))
        if entry is None or entry[1] != version or any(a is not b for a, b in zip(entry[0], objects)):
            return None
        return entry[2]

    def put(self, objects: tuple, version: object, value: object) -> object:
        """Keep `value` (not None) for `objects` at `version`, dropping the oldest entry when full; returns it."""
        with self._lock:
            entries = self._entries
            if len(entries) >= self.kept:
                entries.pop(next(iter(entries), None), None)
            entries[tuple(map(id, objects))] = (objects, version, value)
        return value

    def cached(self, objects: tuple, version: object, compute, keep: bool = True) -> object:
        """The value kept for `objects` at `version`, else `compute()`, kept where `keep`."""
        got = self.get(objects, version)
        if got is None:
            got = compute()
            if keep:
                self.put(objects, version, got)
        return got

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
