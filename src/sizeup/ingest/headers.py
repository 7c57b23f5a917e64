"""Read model files from their headers only: `.safetensors` (JSON header, here) and `.gguf` (metadata and
tensor infos, `sizeup.ingest.gguf`). Nothing past the header is read, nothing is executed, and no length a
header claims is trusted before it is checked against the file's size. Only a regular file is opened
(`sizeup.files`), and one that changes while it is read is refused.

Headers are aggregated as they are read, never kept entry by entry: a safetensors header is scanned
one tensor entry at a time (the whole header is never built as one JSON object). Every entry is
type-checked (a dtype is a known name, a shape a list of non-negative integers, offsets two integers
inside the data) and the parameters are bounded (`sizeup.ingest.limits.MAX_PARAMS`). Then, as the
safetensors library's own validation does, the tensors must cover the data exactly: no two share a byte,
no gap is left and the last ends where the file does; and no name is given twice (with per tensor only
its offsets and a hash of its name kept, 32 bytes).
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
from array import array
from dataclasses import dataclass, replace
from itertools import pairwise
from pathlib import Path
from typing import Any

from sizeup.errors import ConfigError, IngestError
from sizeup.files import check_unchanged, open_regular
from sizeup.ingest.arch import ModelArch
from sizeup.ingest.config_file import read_config_file
from sizeup.ingest.families.registry import parse_config
from sizeup.ingest.gguf import GGUF_FILE_TYPES, GGUFHeader, gguf_config, read_gguf_header, stored_format
from sizeup.ingest.limits import MAX_PARAMS, MAX_PARAMS_TEXT

__all__ = ["SafetensorsHeader", "GGUFHeader", "read_safetensors_header", "read_gguf_header", "model_from_header",
           "gguf_config", "GGUF_FILE_TYPES", "PARAMS_TOLERANCE"]

MAX_HEADER_BYTES = 100 * 2**20
"""A safetensors header above this is refused (the format's own readers cap it the same way)."""
MAX_DIMS = 32
"""Most dimensions a tensor may claim (real checkpoints use at most 5)."""
PARAMS_TOLERANCE = 0.01
"""Header parameters and the config's may differ by this fraction before a warning is given."""

SAFETENSORS_DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "I64": 8, "I32": 4,
                           "I16": 2, "I8": 1, "U8": 1, "BOOL": 1, "U16": 2, "U32": 4, "U64": 8}

@dataclass(frozen=True, slots=True, kw_only=True)
class SafetensorsHeader:
    path: str
    tensor_count: int
    metadata: dict[str, str]
    params: int
    bytes_by_dtype: dict[str, int]


# ---- safetensors ------------------------------------------------------------------------------

_SPACE = re.compile(r"[ \t\n\r]*")
_COMPACT_ENTRY = re.compile(r'"([^"\\\x00-\x1f]*)":\{"dtype":"([A-Z0-9_]+)","shape":\[((?:0|[1-9][0-9]*)(?:,(?:0|[1-9][0-9]*))*)?\],'
                            r'"data_offsets":\[(0|[1-9][0-9]*),(0|[1-9][0-9]*)\]\}[ \t\n\r]*([,}])[ \t\n\r]*')
"""One tensor entry as the safetensors library writes it (serde_json, compact), with its separator."""
_INT = {int}
_DECODER = json.JSONDecoder(parse_constant=lambda name: _not_a_number(name))
_scan_value = _DECODER.scan_once  # the C scanner: one JSON value from an index -> (value, end)


def _not_a_number(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in a header")


def read_safetensors_header(path: str | Path) -> SafetensorsHeader:
    path = Path(path)
    with open_regular(path, what="model file", error=IngestError) as opened:
        size = opened.size
        raw = opened.fh.read(8)
        if len(raw) < 8:
            raise IngestError(f"{path}: truncated safetensors file ({size} bytes, no header length)")
        (length,) = struct.unpack("<Q", raw)
        if length > size - 8 or length > MAX_HEADER_BYTES:
            raise IngestError(f"{path}: safetensors header claims {length:,} bytes but the file has {size - 8:,} "
                              f"after the length field (limit {MAX_HEADER_BYTES:,}): corrupt or truncated")
        blob = opened.fh.read(length)
        if len(blob) != length:
            check_unchanged(opened, IngestError)
            raise IngestError(f"{path}: the file ended inside its {length:,}-byte header: it changed while it was read")
        check_unchanged(opened, IngestError)
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as e:
        raise IngestError(f"{path}: safetensors header is not UTF-8 JSON (byte 0x{blob[e.start]:02x} at offset "
                          f"{e.start + 8})") from None
    del blob
    return _SafetensorsScan(path, size - 8 - length).run(text)


class _SafetensorsScan:
    """One pass over the header's top-level object, an entry at a time; only the sums are kept."""

    def __init__(self, path: Path, data_size: int, wanted: int | None = None) -> None:
        self.path, self.data_size = path, data_size
        self.count = self.params = self.claimed = 0
        self.by_dtype: dict[str, int] = {}
        self.metadata: dict[str, str] = {}
        self.begins, self.ends, self.hashes = array("Q"), array("Q"), array("q")
        """Offsets of every tensor that holds bytes, and the hash of every name: the layout and duplicate checks."""
        self.wanted, self.seen = wanted, set()
        """A second pass looking for the names of hash `wanted` (a name given twice), every entry read slowly."""

    def fail(self, message: str) -> IngestError:
        return IngestError(f"{self.path}: {message}")

    def run(self, text: str) -> SafetensorsHeader:
        try:
            self._scan(text)
        except (json.JSONDecodeError, StopIteration, ValueError) as e:
            where = e.pos if isinstance(e, json.JSONDecodeError) else e.value if isinstance(e, StopIteration) else None
            detail = f"at character {where:,}" if isinstance(where, int) else str(e).splitlines()[0][:80]
            raise self.fail(f"safetensors header is not valid JSON ({detail})") from None
        except RecursionError:
            raise self.fail("safetensors header nests too deeply to be a header") from None
        self._check_layout()
        self._check_names(text)
        return SafetensorsHeader(path=str(self.path), tensor_count=self.count, metadata=self.metadata,
                                 params=self.params, bytes_by_dtype=self.by_dtype)

    def _scan(self, text: str) -> None:
        i = _SPACE.match(text, 0).end()
        if text[i:i + 1] != "{":
            raise self.fail("safetensors header is not a JSON object")
        i = _SPACE.match(text, i + 1).end()
        if text[i:i + 1] == "}":
            return self._end(text, i + 1)
        while True:
            i, closed = self._compact_run(text, i)
            if closed:
                return self._end(text, i)
            if text[i:i + 1] != '"':
                raise json.JSONDecodeError("expected a tensor name", text, i)
            name, i = json.decoder.scanstring(text, i + 1)
            i = _SPACE.match(text, i).end()
            if text[i:i + 1] != ":":
                raise json.JSONDecodeError("expected ':'", text, i)
            value, i = _scan_value(text, _SPACE.match(text, i + 1).end())
            self._entry(name, value)
            i = _SPACE.match(text, i).end()
            if text[i:i + 1] == ",":
                i = _SPACE.match(text, i + 1).end()
            elif text[i:i + 1] == "}":
                return self._end(text, i + 1)
            else:
                raise json.JSONDecodeError("expected ',' or '}'", text, i)

    def _compact_run(self, text: str, i: int) -> tuple[int, bool]:
        """Entries in the compact form the safetensors library writes, from `i`, summed with local
        variables (the hot loop of a header of millions of tensors); any entry that is not plainly
        valid goes to `_tensor`, which raises with its message. Returns where the run stopped and
        whether it closed the header object."""
        if self.wanted is not None:
            return i, False
        fast, widths, by_dtype, data_size = _COMPACT_ENTRY.match, SAFETENSORS_DTYPE_BYTES, self.by_dtype, self.data_size
        count, params, claimed = self.count, self.params, self.claimed
        add_begin, add_end, add_hash = self.begins.append, self.ends.append, self.hashes.append
        try:
            while (m := fast(text, i)) is not None:
                name, dtype, shape, b, e, sep = m.groups()
                dims = [int(d) for d in shape.split(",")] if shape else []
                numel, begin, end, width = math.prod(dims), int(b), int(e), widths.get(dtype, 0)
                size = end - begin
                if (not width or len(dims) > MAX_DIMS or (dims and max(dims) >= 2**63) or size != numel * width
                        or begin > end or end > data_size or params + numel > MAX_PARAMS or claimed + size > data_size
                        or name == "__metadata__"):
                    self.count, self.params, self.claimed = count, params, claimed
                    return i, False  # the entry by entry path reads it, and raises naming the tensor
                count, params, claimed = count + 1, params + numel, claimed + size
                by_dtype[dtype] = by_dtype.get(dtype, 0) + size
                add_hash(hash(name))
                if size:
                    add_begin(begin)
                    add_end(end)
                i = m.end()
                if sep == "}":
                    return i, True
            return i, False
        finally:
            self.count, self.params, self.claimed = count, params, claimed

    def _end(self, text: str, i: int) -> None:
        if _SPACE.match(text, i).end() != len(text):  # the format pads with spaces, nothing else
            raise json.JSONDecodeError("extra data after the header object", text, i)

    def _entry(self, name: str, info: Any) -> None:
        self._note_name(name)
        if name == "__metadata__":
            if info is None:
                return
            if not isinstance(info, dict) or not all(isinstance(v, str) for v in info.values()):
                raise self.fail("__metadata__ must map names to strings")
            self.metadata = info
            return
        if not isinstance(info, dict):
            raise self.fail(f"tensor {name[:80]!r} has a malformed entry in the header (expected an object)")
        offsets = info.get("data_offsets")
        if type(offsets) is not list or len(offsets) != 2 or type(offsets[0]) is not int or type(offsets[1]) is not int:
            raise self.fail(f"tensor {name[:80]!r} has data_offsets {_short(offsets)}: expected [begin, end], "
                            f"two integers")
        self._tensor(name, info.get("dtype"), info.get("shape"), offsets[0], offsets[1])

    def _tensor(self, name: str, dtype: Any, shape: Any, begin: int, end: int) -> None:
        if type(dtype) is not str or dtype not in SAFETENSORS_DTYPE_BYTES:
            raise self.fail(f"tensor {name[:80]!r} has dtype {_short(dtype)}: expected one of "
                            f"{', '.join(SAFETENSORS_DTYPE_BYTES)}")
        if type(shape) is not list or len(shape) > MAX_DIMS or (shape and (
                not set(map(type, shape)) <= _INT or min(shape) < 0 or max(shape) >= 2**63)):
            raise self.fail(f"tensor {name[:80]!r} has shape {_short(shape)}: expected a list of at most {MAX_DIMS} "
                            f"non-negative integers")
        numel = math.prod(shape)
        if numel > MAX_PARAMS or self.params + numel > MAX_PARAMS:
            raise self.fail(f"tensor {name[:80]!r} brings the header past {MAX_PARAMS_TEXT} parameters "
                            f"(the bound on parameters)")
        if not 0 <= begin <= end <= self.data_size or end - begin != numel * SAFETENSORS_DTYPE_BYTES[dtype]:
            raise self.fail(f"tensor {name[:80]!r} data offsets [{begin}, {end}] do not match its shape or the "
                            f"file size ({self.data_size:,} data bytes): truncated or corrupt")
        self.claimed += end - begin
        if self.claimed > self.data_size:
            raise self.fail(f"the tensors claim more than the file's {self.data_size:,} data bytes (duplicated or "
                            f"overlapping entries): truncated or corrupt")
        self.count += 1
        self.params += numel
        self.by_dtype[dtype] = self.by_dtype.get(dtype, 0) + end - begin
        if end > begin:
            self.begins.append(begin)
            self.ends.append(end)

    def _note_name(self, name: str) -> None:
        key = hash(name)
        self.hashes.append(key)
        if key == self.wanted:
            if name in self.seen:
                raise self.fail(f"tensor {name[:80]!r} appears twice in the header: expected each name once")
            self.seen.add(name)

    def _check_layout(self) -> None:
        """The tensors that hold bytes tile the data exactly, as the safetensors library requires of a file
        (its `Metadata::validate`: each tensor starts where the one before ends, the last ends at the end of
        the file). With the begins and the ends each sorted, tensor k covers [begins[k], ends[k]) when they
        do; the first place they do not is a gap or bytes claimed twice."""
        position = 0
        for begin, end in zip(sorted(self.begins), sorted(self.ends)):
            if begin > position:
                raise self.fail(f"data bytes [{position:,}, {begin:,}) belong to no tensor: expected tensors laid end "
                                f"to end (as the safetensors library writes and requires): corrupt")
            if begin < position:
                raise self.fail(f"two tensors claim data bytes from {begin:,} to {position:,} (overlapping or "
                                f"duplicated entries): expected each byte in one tensor: corrupt")
            position = end
        if position != self.data_size:
            raise self.fail(f"the tensors end at data byte {position:,} but the file holds {self.data_size:,} data "
                            f"bytes: expected the last tensor to end where the file does (truncated or extended)")

    def _check_names(self, text: str) -> None:
        """No name twice: the sorted name hashes are distinct, else a second pass finds the name."""
        repeated = next((a for a, b in pairwise(sorted(self.hashes)) if a == b), None)
        if repeated is not None and self.wanted is None:
            _SafetensorsScan(self.path, self.data_size, wanted=repeated)._scan(text)  # raises, naming it


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def model_from_header(path: str | Path) -> ModelArch:
    """The architecture of a `.gguf` file from its metadata (with the weight format it stores), or of a
    `.safetensors` file from the `config.json` beside it, checked against the parameters its header (and
    its sibling shards') hold: more than `PARAMS_TOLERANCE` apart gives a warning among the model's
    assumptions."""
    path = Path(path)
    if path.suffix == ".safetensors":
        header = read_safetensors_header(path)
        config = path.parent / "config.json"
        if not os.path.lexists(config):  # one that is there but not a file is refused, saying why, by the reader
            raise ConfigError(f"{path}: a safetensors file has no architecture; put its config.json beside it "
                              f"({header.params:,} parameters in the header)")
        arch = parse_config(read_config_file(config), name=config.parent.name or config.stem, where=str(config))
        return _cross_checked(arch, path, header, config)
    from sizeup.sources import upload_prefix_of

    header = read_gguf_header(path, prefix_of=upload_prefix_of(path))
    config, sources = gguf_config(header)
    fmt, source = stored_format(header)
    name = header.metadata.get("general.name")
    arch = parse_config(config, name=name if isinstance(name, str) and name else path.stem,
                        where=f"{path} (GGUF metadata)", sources=sources)
    if header.prefix_of is not None:
        arch = replace(arch, assumptions=arch.assumptions + (
            f"GGUF read from the first {path.stat().st_size:,} bytes of a {header.prefix_of:,}-byte file, as "
            f"uploaded: metadata and tensor descriptors checked, tensor data not seen",))
    return replace(arch, stored_format=fmt, stored_format_from=source)


_SHARD = re.compile(r"^(?P<stem>.+)-(?P<index>\d+)-of-(?P<count>\d+)$")


def _cross_checked(arch: ModelArch, path: Path, header: SafetensorsHeader, config: Path) -> ModelArch:
    """`arch` with a warning when the header's parameters (all shards') and the config's disagree."""
    stored, files, verb = header.params, path.name, "holds"
    shard = _SHARD.match(path.stem)
    if shard:
        count = int(shard["count"])
        width = len(shard["index"])
        others = [path.with_name(f"{shard['stem']}-{i:0{width}d}-of-{shard['count']}.safetensors")
                  for i in range(1, min(count, 10_000) + 1)]
        present = [p for p in others if p.is_file()]
        if len(present) < count:
            note = (f"parameters not cross-checked against the header: {len(present)} of {count} shards of "
                    f"{shard['stem']} present")
            return replace(arch, assumptions=arch.assumptions + (note,))
        stored = sum(read_safetensors_header(p).params if p != path else header.params for p in present)
        files, verb = f"the {count} shards of {shard['stem']}", "hold"
    expected = arch.params
    if abs(stored - expected) <= PARAMS_TOLERANCE * expected:
        return arch
    warning = (f"warning: {files} {verb} {stored:,} parameters but {config.name} describes {expected:,} "
               f"({abs(stored - expected) / expected:.0%} apart, more than {PARAMS_TOLERANCE:.0%}): the estimate "
               f"follows the config")
    return replace(arch, assumptions=arch.assumptions + (warning,))
