"""Read model files from their headers only: `.safetensors` (JSON header) and `.gguf` (metadata and
tensor infos). Nothing past the header is read, nothing is executed, and no length a header claims is
trusted before it is checked against the file's size.

Headers are aggregated as they are read, never kept entry by entry: a safetensors header is scanned
one tensor entry at a time (the whole header is never built as one JSON object), a GGUF file's tensor
infos are summed as they pass. Every entry is type-checked (a dtype is a known name, a shape a list of
non-negative integers, offsets two integers inside the data) and the parameters are bounded
(`sizeup.ingest.limits.MAX_PARAMS`).
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

from sizeup.errors import ConfigError, IngestError
from sizeup.ingest.arch import ModelArch
from sizeup.ingest.config_file import read_config_file
from sizeup.ingest.families.registry import parse_config
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

# ggml type ids (ggml.h enum ggml_type) -> name; block layouts are in sizeup.formats.
GGML_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1", 10: "Q2_K",
              11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 20: "IQ4_NL", 23: "IQ4_XS", 24: "I8",
              25: "I16", 26: "I32", 27: "I64", 28: "F64", 30: "BF16"}
# llama.cpp `general.file_type` (enum llama_ftype) -> sizeup weight format id
GGUF_FILE_TYPES = {0: "fp32", 1: "f16", 2: "q4_0", 3: "q4_1", 7: "q8_0", 8: "q5_0", 10: "q2_k", 12: "q3_k_m",
                   14: "q4_k_s", 15: "q4_k_m", 16: "q5_k_s", 17: "q5_k_m", 18: "q6_k", 30: "iq4_xs", 32: "bf16"}
_GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


@dataclass(frozen=True, slots=True, kw_only=True)
class SafetensorsHeader:
    path: str
    tensor_count: int
    metadata: dict[str, str]
    params: int
    bytes_by_dtype: dict[str, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class GGUFHeader:
    path: str
    version: int
    metadata: dict[str, Any]
    """Scalars and strings as read; arrays of up to 4,096 items as lists, longer ones as their length."""
    tensor_count: int
    params: int
    types: dict[str, int] = field(default_factory=dict)
    """Parameters per ggml type."""
    has_output: bool = False
    """The file stores an `output.weight` (an LM head not tied to the embeddings)."""


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
    size = _size(path)
    with open(path, "rb") as fh:
        raw = fh.read(8)
        if len(raw) < 8:
            raise IngestError(f"{path}: truncated safetensors file ({size} bytes, no header length)")
        (length,) = struct.unpack("<Q", raw)
        if length > size - 8 or length > MAX_HEADER_BYTES:
            raise IngestError(f"{path}: safetensors header claims {length:,} bytes but the file has {size - 8:,} "
                              f"after the length field (limit {MAX_HEADER_BYTES:,}): corrupt or truncated")
        blob = fh.read(length)
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as e:
        raise IngestError(f"{path}: safetensors header is not UTF-8 JSON (byte 0x{blob[e.start]:02x} at offset "
                          f"{e.start + 8})") from None
    del blob
    return _SafetensorsScan(path, size - 8 - length).run(text)


class _SafetensorsScan:
    """One pass over the header's top-level object, an entry at a time; only the sums are kept."""

    def __init__(self, path: Path, data_size: int) -> None:
        self.path, self.data_size = path, data_size
        self.count = self.params = self.claimed = 0
        self.by_dtype: dict[str, int] = {}
        self.metadata: dict[str, str] = {}

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
        fast, widths, by_dtype, data_size = _COMPACT_ENTRY.match, SAFETENSORS_DTYPE_BYTES, self.by_dtype, self.data_size
        count, params, claimed = self.count, self.params, self.claimed
        try:
            while (m := fast(text, i)) is not None:
                name, dtype, shape, b, e, sep = m.groups()
                dims = [int(d) for d in shape.split(",")] if shape else []
                numel, begin, end, width = math.prod(dims), int(b), int(e), widths.get(dtype, 0)
                size = end - begin
                if (not width or len(dims) > MAX_DIMS or (dims and max(dims) >= 2**63) or size != numel * width
                        or begin > end or end > data_size or params + numel > MAX_PARAMS or claimed + size > data_size):
                    self.count, self.params, self.claimed = count, params, claimed
                    self._tensor(name, dtype, dims, begin, end)  # raises, naming the tensor
                count, params, claimed = count + 1, params + numel, claimed + size
                by_dtype[dtype] = by_dtype.get(dtype, 0) + size
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


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ---- GGUF -------------------------------------------------------------------------------------

class _Reader:
    """Bounded little-endian reads: every length is checked against what remains of the file."""

    def __init__(self, fh: BinaryIO, size: int, path: Path) -> None:
        self.fh, self.size, self.path = fh, size, path

    def take(self, n: int) -> bytes:
        if n < 0 or n > self.size - self.fh.tell():
            raise IngestError(f"{self.path}: GGUF header claims {n:,} more bytes at offset {self.fh.tell():,} but the "
                              f"file has {self.size:,} bytes: truncated or corrupt")
        return self.fh.read(n)

    def scalar(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        return self.take(self.scalar("<Q")).decode("utf-8", errors="replace")

    def value(self, kind: int, depth: int = 0) -> Any:
        if kind in _GGUF_SCALARS:
            return self.scalar(_GGUF_SCALARS[kind])
        if kind == 8:
            return self.string()
        if kind == 9 and depth == 0:
            inner, count = self.scalar("<I"), self.scalar("<Q")
            smallest = struct.calcsize(_GGUF_SCALARS[inner]) if inner in _GGUF_SCALARS else 8
            if count * smallest > self.size - self.fh.tell():
                raise IngestError(f"{self.path}: GGUF array of {count:,} items does not fit in the file: corrupt")
            if inner in _GGUF_SCALARS:
                fmt = _GGUF_SCALARS[inner]
                raw = self.take(count * struct.calcsize(fmt))
                return list(struct.unpack(f"<{count}{fmt[1:]}", raw)) if count <= 4096 else count
            return [self.value(inner, 1) for _ in range(count)] if count <= 4096 else _skip_strings(self, count)
        if kind == 9:
            raise IngestError(f"{self.path}: GGUF array of arrays at offset {self.fh.tell():,}: not supported")
        raise IngestError(f"{self.path}: unknown GGUF value type {kind}")


def _skip_strings(reader: _Reader, count: int) -> int:
    """Long string arrays (the tokenizer's vocabulary) are skipped; their length is kept."""
    for _ in range(count):
        reader.take(reader.scalar("<Q"))
    return count


def read_gguf_header(path: str | Path) -> GGUFHeader:
    path = Path(path)
    size = _size(path)
    with open(path, "rb") as fh:
        r = _Reader(fh, size, path)
        if r.take(4) != b"GGUF":
            raise IngestError(f"{path}: not a GGUF file (magic bytes are not 'GGUF')")
        version = r.scalar("<I")
        if version not in (2, 3):
            raise IngestError(f"{path}: GGUF version {version} is not supported (expected 2 or 3)")
        n_tensors, n_kv = r.scalar("<Q"), r.scalar("<Q")
        if n_tensors > size // 24 or n_kv > size // 12:
            raise IngestError(f"{path}: GGUF header claims {n_tensors:,} tensors and {n_kv:,} keys, more than "
                              f"a {size:,}-byte file can hold: corrupt")
        metadata = {}
        for _ in range(n_kv):
            key = r.string()
            metadata[key] = r.value(r.scalar("<I"))
        params, types, has_output = 0, {}, False
        for _ in range(n_tensors):
            name = r.string()
            n_dims = r.scalar("<I")
            if n_dims > 8:
                raise IngestError(f"{path}: tensor {name[:80]!r} claims {n_dims} dimensions: corrupt")
            numel = math.prod(r.scalar("<Q") for _ in range(n_dims))
            kind = GGML_TYPES.get(r.scalar("<I"), "unknown")
            r.scalar("<Q")  # data offset
            params += numel
            if params > MAX_PARAMS:
                raise IngestError(f"{path}: tensor {name[:80]!r} brings the header past {MAX_PARAMS_TEXT} parameters "
                                  f"(the bound on parameters): corrupt")
            types[kind] = types.get(kind, 0) + numel
            has_output = has_output or name == "output.weight"
    return GGUFHeader(path=str(path), version=version, metadata=metadata, tensor_count=n_tensors, params=params,
                      types=types, has_output=has_output)


def _size(path: Path) -> int:
    """The size of a regular, readable file (a folder, a device or a FIFO is refused before any read)."""
    try:
        if not path.is_file():
            reason = "is not a regular file" if path.exists() else "does not exist"
            raise IngestError(f"model file {str(path)!r} {reason}")
        with open(path, "rb"):
            pass
        return os.path.getsize(path)
    except OSError as e:
        raise IngestError(f"model file {str(path)!r} cannot be read ({e.strerror})") from None


# GGUF metadata keys ({arch}.*) -> config.json fields
_GGUF_FIELDS = {
    "embedding_length": "hidden_size", "block_count": "num_hidden_layers", "feed_forward_length": "intermediate_size",
    "attention.head_count": "num_attention_heads", "attention.head_count_kv": "num_key_value_heads",
    "context_length": "max_position_embeddings", "attention.key_length": "head_dim", "vocab_size": "vocab_size",
    "expert_count": "num_local_experts", "expert_used_count": "num_experts_per_tok",
    "attention.sliding_window": "sliding_window",
}
_GGUF_MODEL_TYPES = {"llama": "llama", "qwen2": "qwen2", "qwen3": "qwen3", "gemma2": "gemma2", "gemma": "gemma",
                     "phi3": "phi3", "mistral": "mistral"}
_TOKENS = "tokenizer.ggml.tokens"


def gguf_config(header: GGUFHeader) -> tuple[dict[str, Any], dict[str, str]]:
    """The config.json fields a GGUF file's metadata gives, and for each the GGUF key it came from
    (values as stored: the config parser type- and range-checks them)."""
    arch_name = header.metadata.get("general.architecture")
    if not isinstance(arch_name, str) or arch_name not in _GGUF_MODEL_TYPES:
        raise ConfigError(f"{header.path}: GGUF architecture {_short(arch_name)} is not supported (expected one of "
                          f"{', '.join(sorted(_GGUF_MODEL_TYPES))})")
    config: dict[str, Any] = {"model_type": _GGUF_MODEL_TYPES[arch_name]}
    sources: dict[str, str] = {}
    for key, field_name in _GGUF_FIELDS.items():
        value = header.metadata.get(f"{arch_name}.{key}")
        if value is not None:
            config[field_name], sources[field_name] = value, f"{arch_name}.{key}"
    if "vocab_size" not in config:
        tokens = header.metadata.get(_TOKENS)
        if isinstance(tokens, list):
            config["vocab_size"] = len(tokens)
        elif isinstance(tokens, int) and not isinstance(tokens, bool):
            config["vocab_size"] = tokens
        elif tokens is not None:
            raise ConfigError(f"{header.path}: GGUF {_TOKENS!r} = {_short(tokens)}: expected an array of tokens")
        sources["vocab_size"] = f"length of {_TOKENS}"
    config["tie_word_embeddings"] = not header.has_output
    if config.get("num_local_experts"):
        config["model_type"] = "mixtral"
    return config, sources


def model_from_header(path: str | Path) -> ModelArch:
    """The architecture of a `.gguf` file from its metadata, or of a `.safetensors` file from the
    `config.json` beside it, checked against the parameters its header (and its sibling shards')
    hold: more than `PARAMS_TOLERANCE` apart gives a warning among the model's assumptions."""
    path = Path(path)
    if path.suffix == ".safetensors":
        header = read_safetensors_header(path)
        config = path.parent / "config.json"
        if not config.is_file():
            raise ConfigError(f"{path}: a safetensors file has no architecture; put its config.json beside it "
                              f"({header.params:,} parameters in the header)")
        arch = parse_config(read_config_file(config), name=config.parent.name or config.stem, where=str(config))
        return _cross_checked(arch, path, header, config)
    header = read_gguf_header(path)
    config, sources = gguf_config(header)
    name = header.metadata.get("general.name")
    return parse_config(config, name=name if isinstance(name, str) and name else path.stem,
                        where=f"{path} (GGUF metadata)", sources=sources)


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
