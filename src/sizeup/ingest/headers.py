"""Read model files from their headers only: `.safetensors` (JSON header) and `.gguf` (metadata and
tensor infos). Nothing past the header is read, nothing is executed, and no length a header claims is
trusted before it is checked against the file's size.
"""

from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from sizeup.errors import ConfigError, IngestError
from sizeup.ingest.arch import ModelArch
from sizeup.ingest.config_file import read_config_file
from sizeup.ingest.families.registry import parse_config

__all__ = ["SafetensorsHeader", "GGUFHeader", "read_safetensors_header", "read_gguf_header", "model_from_header",
           "GGUF_FILE_TYPES"]

MAX_HEADER_BYTES = 100 * 2**20
"""A safetensors header above this is refused (the format's own readers cap it the same way)."""

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
    tensors: dict[str, tuple[str, tuple[int, ...]]]
    metadata: dict[str, str]
    params: int
    bytes_by_dtype: dict[str, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class GGUFHeader:
    path: str
    version: int
    metadata: dict[str, Any]
    tensors: list[tuple[str, tuple[int, ...], str]]
    params: int
    types: dict[str, int] = field(default_factory=dict)
    """Parameters per ggml type."""


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
        header = json.loads(blob)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise IngestError(f"{path}: safetensors header is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise IngestError(f"{path}: safetensors header is not a JSON object")
    metadata = header.pop("__metadata__", {}) or {}
    tensors, params, by_dtype = {}, 0, {}
    data_size = size - 8 - length
    for name, info in header.items():
        try:
            dtype, shape, (begin, end) = info["dtype"], tuple(int(d) for d in info["shape"]), info["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise IngestError(f"{path}: tensor {name!r} has a malformed entry in the header") from None
        if dtype not in SAFETENSORS_DTYPE_BYTES:
            raise IngestError(f"{path}: tensor {name!r} has unknown dtype {dtype!r}")
        numel = math.prod(shape)
        if not 0 <= begin <= end <= data_size or end - begin != numel * SAFETENSORS_DTYPE_BYTES[dtype]:
            raise IngestError(f"{path}: tensor {name!r} data offsets [{begin}, {end}] do not match its shape or the "
                              f"file size ({data_size:,} data bytes): truncated or corrupt")
        tensors[name] = (dtype, shape)
        params += numel
        by_dtype[dtype] = by_dtype.get(dtype, 0) + end - begin
    return SafetensorsHeader(path=str(path), tensors=tensors, metadata=dict(metadata), params=params,
                             bytes_by_dtype=by_dtype)


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
        tensors, params, types = [], 0, {}
        for _ in range(n_tensors):
            name = r.string()
            n_dims = r.scalar("<I")
            if n_dims > 8:
                raise IngestError(f"{path}: tensor {name!r} claims {n_dims} dimensions: corrupt")
            dims = tuple(r.scalar("<Q") for _ in range(n_dims))
            kind = GGML_TYPES.get(r.scalar("<I"), "unknown")
            r.scalar("<Q")  # data offset
            numel = math.prod(dims)
            tensors.append((name, dims, kind))
            params += numel
            types[kind] = types.get(kind, 0) + numel
    return GGUFHeader(path=str(path), version=version, metadata=metadata, tensors=tensors, params=params, types=types)


def _size(path: Path) -> int:
    try:
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


def model_from_header(path: str | Path) -> ModelArch:
    """The architecture of a `.gguf` file from its metadata, or of a `.safetensors` file from the
    `config.json` beside it (the header gives the stored parameter count, checked against it)."""
    path = Path(path)
    if path.suffix == ".safetensors":
        header = read_safetensors_header(path)
        config = path.parent / "config.json"
        if not config.is_file():
            raise ConfigError(f"{path}: a safetensors file has no architecture; put its config.json beside it "
                              f"({header.params:,} parameters in the header)")
        return parse_config(read_config_file(config), name=config.parent.name or config.stem, where=str(config))
    header = read_gguf_header(path)
    arch_name = header.metadata.get("general.architecture")
    if arch_name not in _GGUF_MODEL_TYPES:
        raise ConfigError(f"{path}: GGUF architecture {arch_name!r} is not supported (expected one of "
                          f"{', '.join(sorted(_GGUF_MODEL_TYPES))})")
    config: dict[str, Any] = {"model_type": _GGUF_MODEL_TYPES[arch_name]}
    for key, field_name in _GGUF_FIELDS.items():
        value = header.metadata.get(f"{arch_name}.{key}")
        if value is not None:
            config[field_name] = value
    if "vocab_size" not in config:
        tokens = header.metadata.get("tokenizer.ggml.tokens")
        config["vocab_size"] = tokens if isinstance(tokens, int) else len(tokens or [])
    config["tie_word_embeddings"] = not any(name == "output.weight" for name, _, _ in header.tensors)
    if config.get("num_local_experts"):
        config["model_type"] = "mixtral"
    name = str(header.metadata.get("general.name") or path.stem)
    return parse_config(config, name=name, where=str(path))
