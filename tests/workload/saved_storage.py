"""What autograd keeps for backward, counted by storage: the shared probe of the saved-tensor checks.

`with saved_storages(ignored) as kept:` runs a forward under torch's saved-tensor hooks and records
each distinct storage a saved tensor lives in (its bytes, once however many views share it), skipping
the storages in `ignored` (the parameters, constants) and any tensor `keep` declines."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def saved_storages(ignored: set[int], keep: Callable[[object], bool] = lambda t: True) -> Iterator[dict[int, int]]:
    import torch

    kept: dict[int, int] = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in ignored and keep(t):
            kept[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        yield kept


def parameter_storages(model) -> set[int]:
    return {p.untyped_storage().data_ptr() for p in model.parameters()}
