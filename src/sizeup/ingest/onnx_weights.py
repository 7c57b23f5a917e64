"""The initializers of an ONNX model, checked before anything is built from their dims: sizes are
non-negative, bounded (`sizeup.ingest.limits.MAX_PARAMS`) and backed by the bytes that hold them,
inline or in the external data file beside the model (whose contents are never read)."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from sizeup.errors import IngestError
from sizeup.ingest.limits import MAX_PARAMS, MAX_PARAMS_TEXT

__all__ = ["check_initializers"]

_ELEMENT_BITS = {1: 32, 2: 8, 3: 8, 4: 16, 5: 16, 6: 32, 7: 64, 9: 8, 10: 16, 11: 64, 12: 32, 13: 64, 14: 64, 15: 128,
                 16: 16, 17: 8, 18: 8, 19: 8, 20: 8, 21: 4, 22: 4, 23: 4}
"""Bits per element of the ONNX TensorProto data types (strings have no fixed size)."""
_EXTERNAL = 1  # TensorProto.EXTERNAL


def check_initializers(model: Any, path: Path) -> None:
    """Refuse initializers with negative dimensions, more than MAX_PARAMS elements in all, or dims
    their stored data does not back: no size a file claims is trusted before it is checked against
    the bytes that hold it (inline, or in the external data file beside the model)."""
    total = 0
    for w in model.graph.initializer:
        name = w.name[:80]
        if any(d < 0 for d in w.dims):
            raise IngestError(f"{path.name}: initializer {name!r} has dims {list(w.dims)[:8]}: expected "
                              f"non-negative sizes")
        numel = math.prod(w.dims)
        total += numel
        if total > MAX_PARAMS:
            raise IngestError(f"{path.name}: initializer {name!r} ({' x '.join(map(str, w.dims))}) brings the "
                              f"weights past {MAX_PARAMS_TEXT} elements (the bound on parameters): corrupt or not a "
                              f"real model")
        bits = _ELEMENT_BITS.get(w.data_type)
        if bits is None or numel == 0:
            continue
        needed = -(-numel * bits // 8)
        stored = _stored_bytes(w, path, bits)
        if stored < needed:
            raise IngestError(f"{path.name}: initializer {name!r} claims {' x '.join(map(str, w.dims))} elements "
                              f"({needed:,} bytes) but its data holds {stored:,} bytes: truncated or corrupt")


def _stored_bytes(w: Any, path: Path, bits: int) -> int:
    """Bytes of data an initializer really has: inline, or what its external file holds from its offset."""
    if w.data_location != _EXTERNAL:
        if w.raw_data:
            return len(w.raw_data)
        typed = (len(w.float_data) + len(w.int32_data) + len(w.int64_data) + len(w.double_data)
                 + len(w.uint64_data))
        return typed * bits // 8 if bits >= 8 else typed * 8 // bits  # one stored value per element
    info = {e.key: e.value for e in w.external_data}
    location = Path(info.get("location", ""))
    target = (path.parent / location).resolve()
    if location.is_absolute() or path.parent.resolve() not in target.parents:
        raise IngestError(f"{path.name}: initializer {w.name[:80]!r} keeps its data at {str(location)!r}, outside the "
                          f"model's folder")
    try:
        size = os.path.getsize(target)
    except OSError:
        raise IngestError(f"{path.name}: initializer {w.name[:80]!r} keeps its data in {str(location)!r}, which is "
                          f"not beside the model") from None
    try:
        offset, length = int(info.get("offset", 0) or 0), info.get("length")
    except ValueError:
        raise IngestError(f"{path.name}: initializer {w.name[:80]!r} has a malformed external-data offset") from None
    available = max(size - offset, 0)
    return min(available, int(length)) if length and str(length).isdigit() else available
