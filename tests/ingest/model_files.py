"""Builders of model files at the byte level, for the header tests and the fuzz suite."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

PRESETS = Path(__file__).resolve().parents[2] / "src" / "sizeup" / "data" / "models"

# GGUF value type ids (gguf.py GGUFValueType)
U32, I32, F32, BOOL, STRING, ARRAY, U64 = 4, 5, 6, 7, 8, 9, 10
_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def preset_config(name: str) -> dict[str, Any]:
    return json.loads((PRESETS / f"{name}.json").read_text())["config"]


def safetensors_bytes(header: dict[str, Any] | bytes, data_bytes: int = 0, claim: int | None = None) -> bytes:
    blob = header if isinstance(header, bytes) else json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(blob) if claim is None else claim) + blob + b"\0" * data_bytes


def safetensors_header(tensors: dict[str, tuple[int, ...]], dtype: str = "F16") -> tuple[dict[str, Any], int]:
    """A valid header of `tensors` (2-byte dtype) laid end to end, and the data bytes it needs."""
    header, offset = {}, 0
    for name, shape in tensors.items():
        size = 2
        for d in shape:
            size *= d
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    return header, offset


def gguf_string(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def gguf_value(kind: int, value: Any) -> bytes:
    if kind == STRING:
        return gguf_string(value)
    if kind == ARRAY:
        inner, items = value
        return struct.pack("<IQ", inner, len(items)) + b"".join(gguf_value(inner, v) for v in items)
    return struct.pack(_SCALAR[kind], value)


def gguf_bytes(kvs: list[tuple[str, int, Any]], tensors: list[tuple[str, tuple[int, ...], int]],
               version: int = 3, n_tensors: int | None = None, n_kv: int | None = None, alignment: int = 32,
               offsets: list[int] | None = None, data: bool = True) -> bytes:
    """A GGUF file laid out as llama.cpp writes one: the header, the tensor infos, padding to `alignment`,
    then each tensor's data (zeros) at its offset, each padded to the alignment. `offsets` replaces the
    offsets written; `data=False` leaves the data out (a copy of the header only)."""
    from sizeup.formats import GGML_TYPES, GGUF_BLOCKS

    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors) if n_tensors is None else n_tensors,
                                 len(kvs) if n_kv is None else n_kv)
    body = b"".join(gguf_string(k) + struct.pack("<I", kind) + gguf_value(kind, v) for k, kind, v in kvs)
    laid, end = [], 0
    for _, dims, kind in tensors:
        per_block, block_bytes = GGUF_BLOCKS.get(GGML_TYPES.get(kind, ""), (1, 0))  # an unknown type: no data
        count = 1
        for d in dims:
            count *= d
        laid.append(end)
        end += -(-(count // per_block * block_bytes) // alignment) * alignment
    written = laid if offsets is None else offsets
    infos = b"".join(gguf_string(n) + struct.pack("<I", len(d)) + b"".join(struct.pack("<Q", x) for x in d)
                     + struct.pack("<IQ", t, at) for (n, d, t), at in zip(tensors, written))
    raw = head + body + infos
    if tensors:
        raw += b"\0" * (-len(raw) % alignment) + (b"\0" * end if data else b"")
    return raw


def tiny_llama_gguf(**overrides: tuple[int, Any]) -> bytes:
    """A 2-layer LLaMA GGUF file (an F16 embedding, a Q8_0 output, no layer tensors); `overrides` replace or add
    keys: {"llama.block_count": (U32, 1000000)}."""
    return llama_gguf(overrides)


def llama_gguf(overrides: dict[str, tuple[int, Any]] | None = None,
               tensors: list[tuple[str, tuple[int, ...], int]] | None = None, **layout: Any) -> bytes:
    """`tiny_llama_gguf`'s metadata with `overrides`, and `tensors` (name, GGUF dims, ggml type id) in place of
    its two; `layout` goes to `gguf_bytes` (offsets=, data=, alignment=, version=, n_tensors=)."""
    kvs = {"general.architecture": (STRING, "llama"), "general.name": (STRING, "tiny"),
           "llama.embedding_length": (U32, 64), "llama.block_count": (U32, 2),
           "llama.feed_forward_length": (U32, 176), "llama.attention.head_count": (U32, 8),
           "llama.attention.head_count_kv": (U32, 2), "llama.context_length": (U32, 2048),
           "tokenizer.ggml.tokens": (ARRAY, (STRING, [f"t{i}" for i in range(96)]))}
    kvs.update(overrides or {})
    if tensors is None:
        tensors = [("token_embd.weight", (64, 96), 1), ("output.weight", (64, 96), 8)]
    return gguf_bytes([(k, kind, v) for k, (kind, v) in kvs.items()], tensors, **layout)
