"""Reading a `.gguf` file's header: its metadata and tensor descriptors, checked as llama.cpp's own reader
checks them (ggml/src/gguf.cpp `gguf_init_from_reader`, llama-model-loader.cpp), before anything is trusted.

- Versions 2 and 3; keys non-empty, at most 65,535 bytes and unique; tensor names under 64 bytes
  (GGML_MAX_NAME) and unique; counts of keys and tensors bounded by the file's size and by `MAX_KEYS` /
  `MAX_TENSORS`; `general.alignment` a u32 power of two.
- A tensor has at most 4 dimensions (GGML_MAX_DIMS), a known ggml type (`sizeup.formats.GGML_TYPES`: a
  removed or unknown id is refused), rows a whole number of the type's blocks, and its data at the offset
  the layout gives it: tensors follow one another in the data section, each padded to the alignment, and
  all of them inside the file. A truncated file, or one that holds less data than its tensors claim, is
  refused; so is one that changes while it is read.
- Expert tensors (`blk.N.ffn_*_exps`) hold `{arch}.expert_count` experts, experts used per token need
  experts, and no tensor names a block past `{arch}.block_count`.

Only sums are kept: metadata scalars and strings (strings over `MAX_STRING_BYTES`, or past `MAX_HELD_BYTES` of
them, and arrays over `MAX_LISTED` items as their length), parameters per ggml type, and whether an output tensor
is stored.
The weight format comes from `general.file_type` (llama.cpp's `llama_ftype`), else from the type holding
most parameters, and says which (`stored_format`).
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sizeup.errors import ConfigError, IngestError
from sizeup.files import OpenedFile, check_unchanged, open_regular
from sizeup.formats import GGML_TYPES, GGUF_BLOCKS
from sizeup.ingest.limits import MAX_PARAMS, MAX_PARAMS_TEXT
from sizeup.ingest.gguf_arch import ARCHS as GGUF_ARCHS, arch_config

__all__ = ["GGUFHeader", "read_gguf_header", "gguf_config", "stored_format", "GGUF_FILE_TYPES", "MAX_TENSORS",
           "MAX_KEYS"]

MAX_TENSORS = 200_000
"""Most tensors a header may describe (released models hold about 1,200; llama.cpp merges experts into one
tensor per projection)."""
MAX_KEYS = 100_000
"""Most metadata keys (released files hold about 40)."""
MAX_KEY_BYTES = 65_535
"""A key's longest length (the GGUF specification)."""
MAX_NAME_BYTES = 63
"""A tensor name's longest length (GGML_MAX_NAME is 64 with the terminating NUL)."""
MAX_DIMS = 4
"""GGML_MAX_DIMS."""
MAX_STRING_BYTES = 1 << 20
"""Metadata strings longer than this are skipped and kept as their length (sizeup reads none that long)."""
MAX_HELD_BYTES = 64 << 20
"""Most bytes of keys, tensor names and strings held from one header; further strings are kept as their length."""
MAX_LISTED = 4096
"""Arrays longer than this are skipped and kept as their length (the tokenizer's vocabulary)."""
DEFAULT_ALIGNMENT = 32
"""GGUF_DEFAULT_ALIGNMENT."""

# llama.cpp `general.file_type` (enum llama_ftype, llama.h; gguf-py LlamaFileType) -> its name
LLAMA_FILE_TYPES = {
    0: "ALL_F32", 1: "MOSTLY_F16", 2: "MOSTLY_Q4_0", 3: "MOSTLY_Q4_1", 7: "MOSTLY_Q8_0", 8: "MOSTLY_Q5_0",
    9: "MOSTLY_Q5_1", 10: "MOSTLY_Q2_K", 11: "MOSTLY_Q3_K_S", 12: "MOSTLY_Q3_K_M", 13: "MOSTLY_Q3_K_L",
    14: "MOSTLY_Q4_K_S", 15: "MOSTLY_Q4_K_M", 16: "MOSTLY_Q5_K_S", 17: "MOSTLY_Q5_K_M", 18: "MOSTLY_Q6_K",
    19: "MOSTLY_IQ2_XXS", 20: "MOSTLY_IQ2_XS", 21: "MOSTLY_Q2_K_S", 22: "MOSTLY_IQ3_XS", 23: "MOSTLY_IQ3_XXS",
    24: "MOSTLY_IQ1_S", 25: "MOSTLY_IQ4_NL", 26: "MOSTLY_IQ3_S", 27: "MOSTLY_IQ3_M", 28: "MOSTLY_IQ2_S",
    29: "MOSTLY_IQ2_M", 30: "MOSTLY_IQ4_XS", 31: "MOSTLY_IQ1_M", 32: "MOSTLY_BF16", 36: "MOSTLY_TQ1_0",
    37: "MOSTLY_TQ2_0", 38: "MOSTLY_MXFP4_MOE", 39: "MOSTLY_NVFP4", 40: "MOSTLY_Q1_0",
}
# ... -> the sizeup weight format it is (sizeup.formats.FORMATS); the others have none
GGUF_FILE_TYPES = {0: "fp32", 1: "f16", 2: "q4_0", 3: "q4_1", 7: "q8_0", 8: "q5_0", 10: "q2_k", 12: "q3_k_m",
                   14: "q4_k_s", 15: "q4_k_m", 16: "q5_k_s", 17: "q5_k_m", 18: "q6_k", 30: "iq4_xs", 32: "bf16",
                   38: "mxfp4_moe"}
# the ggml type holding most parameters -> the sizeup format read from it when general.file_type is absent
_FORMAT_OF_TYPE = {"F32": "fp32", "F16": "f16", "BF16": "bf16", "Q4_0": "q4_0", "Q4_1": "q4_1", "Q5_0": "q5_0",
                   "Q8_0": "q8_0", "Q2_K": "q2_k", "Q3_K": "q3_k_m", "Q4_K": "q4_k_m", "Q5_K": "q5_k_m",
                   "Q6_K": "q6_k", "IQ4_XS": "iq4_xs", "MXFP4": "mxfp4_moe"}
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY, _U32 = 8, 9, 4
_BLOCK = re.compile(r"^blk\.(\d{1,9})\.")
_EXPERTS = re.compile(r"^blk\.\d{1,9}\.ffn_(?:gate|up|down|gate_up)_exps\.weight$")
_SPLIT_EXPERT = re.compile(r"^blk\.\d{1,9}\.ffn_(?:gate|up|down)\.(\d{1,6})\.weight$")


@dataclass(frozen=True, slots=True, kw_only=True)
class GGUFHeader:
    path: str
    version: int
    metadata: dict[str, Any]
    """Scalars and strings as read (strings over MAX_STRING_BYTES as their length); arrays of up to
    MAX_LISTED items as lists, longer ones as their length."""
    tensor_count: int
    params: int
    types: dict[str, int] = field(default_factory=dict)
    """Parameters per ggml type."""
    has_output: bool = False
    """The file stores an `output.weight` (an LM head not tied to the embeddings)."""
    data_bytes: int = 0
    """Bytes of tensor data the descriptors lay out (with the alignment padding between tensors)."""
    prefix_of: int | None = None
    """Read from the first bytes of a file of this many bytes (an upload of its head); None: the whole file."""


class _Reader:
    """Bounded little-endian reads of an open file: every length is checked against what remains of it, and
    a read that comes back short (the file shrank) is refused."""

    def __init__(self, opened: OpenedFile, prefix_of: int | None = None) -> None:
        self.fh, self.size, self.path, self.opened = opened.fh, opened.size, opened.path, opened
        self.prefix_of = prefix_of
        """The whole file's size when this is only its head (an upload)."""
        self.held = 0
        """Bytes of keys, names and strings read into memory so far."""

    def fail(self, message: str) -> IngestError:
        return IngestError(f"{self.path}: {message}")

    def past_end(self, n: int) -> IngestError:
        if self.prefix_of is not None and self.size < self.prefix_of:
            return self.fail(f"GGUF header runs past the first {self.size:,} bytes uploaded (of a {self.prefix_of:,}-"
                             f"byte file; {n:,} more bytes at offset {self.fh.tell():,}): expected a header within "
                             f"them; `sizeup estimate FILE` on the command line reads any header")
        return self.fail(f"GGUF header claims {n:,} more bytes at offset {self.fh.tell():,} but the file has "
                         f"{self.size:,} bytes: truncated or corrupt")

    def remaining(self) -> int:
        return self.size - self.fh.tell()

    def take(self, n: int) -> bytes:
        if n < 0 or n > self.remaining():
            raise self.past_end(n)
        data = self.fh.read(n)
        if len(data) != n:
            check_unchanged(self.opened, IngestError)
            raise self.fail(f"GGUF file ended at offset {self.fh.tell():,}, before the {self.size:,} bytes it had when "
                            f"opened: it changed while it was read")
        return data

    def skip(self, n: int) -> None:
        if n < 0 or n > self.remaining():
            raise self.past_end(n)
        self.fh.seek(n, 1)

    def scalar(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self, what: str, most: int | None = None) -> str | int:
        """A string. With `most` (a key, a tensor name: they must be held) one longer is refused; without, one
        longer than MAX_STRING_BYTES, or past MAX_HELD_BYTES of strings held, is skipped and its length kept."""
        n = self.scalar("<Q")
        if most is not None and n > most:
            raise self.fail(f"GGUF {what} of {n:,} bytes at offset {self.fh.tell() - 8:,}: expected at most {most:,}")
        if most is None and (n > MAX_STRING_BYTES or self.held + n > MAX_HELD_BYTES):
            self.skip(n)
            return n
        self.held += n
        if self.held > MAX_HELD_BYTES:
            raise self.fail(f"GGUF keys and names hold more than {MAX_HELD_BYTES:,} bytes: expected a header sizeup "
                            f"can hold (corrupt?)")
        return self.take(n).decode("utf-8", errors="replace")

    def value(self, kind: int, key: str) -> Any:
        if kind in _SCALARS:
            return self.scalar(_SCALARS[kind])
        if kind == _STRING:
            return self.string(f"value of {_short(key)}")
        if kind != _ARRAY:
            raise self.fail(f"GGUF key {_short(key)} has value type {kind}: expected 0-12 (a GGUF value type)")
        inner, count = self.scalar("<I"), self.scalar("<Q")
        if inner == _ARRAY:
            raise self.fail(f"GGUF key {_short(key)} holds an array of arrays: not supported")
        if inner != _STRING and inner not in _SCALARS:
            raise self.fail(f"GGUF key {_short(key)} holds an array of value type {inner}: expected 0-12")
        width = struct.calcsize(_SCALARS[inner]) if inner in _SCALARS else 8  # a string costs its 8-byte length
        if count * width > self.remaining():
            raise self.fail(f"GGUF array {_short(key)} of {count:,} items does not fit in the file: truncated or "
                            f"corrupt")
        if inner != _STRING:
            if count > MAX_LISTED:
                self.skip(count * width)
                return count
            fmt = _SCALARS[inner]
            return list(struct.unpack(f"<{count}{fmt[1:]}", self.take(count * width)))
        if count > MAX_LISTED:
            for _ in range(count):
                self.skip(self.scalar("<Q"))
            return count
        return [self.string(f"item of {_short(key)}") for _ in range(count)]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _header_counts(r: _Reader) -> tuple[int, int, int]:
    if r.take(4) != b"GGUF":
        raise r.fail("not a GGUF file (magic bytes are not 'GGUF')")
    version = r.scalar("<I")
    if version and not version & 0xFFFF:
        raise r.fail(f"GGUF version {version:#x}: a big-endian file, which sizeup does not read (expected 2 or 3)")
    if version not in (2, 3):
        raise r.fail(f"GGUF version {version} is not supported (expected 2 or 3)")
    n_tensors, n_kv = r.scalar("<Q"), r.scalar("<Q")
    if n_tensors > r.size // 24 or n_kv > r.size // 12:
        raise r.fail(f"GGUF header claims {n_tensors:,} tensors and {n_kv:,} keys, more than a {r.size:,}-byte "
                     f"file can hold: corrupt")
    if n_tensors > MAX_TENSORS or n_kv > MAX_KEYS:
        raise r.fail(f"GGUF header claims {n_tensors:,} tensors and {n_kv:,} keys: expected at most "
                     f"{MAX_TENSORS:,} tensors and {MAX_KEYS:,} keys")
    return version, n_tensors, n_kv


def _alignment(r: _Reader, metadata: dict[str, Any], kinds: dict[str, int]) -> int:
    value = metadata.get("general.alignment")
    if value is None:
        return DEFAULT_ALIGNMENT
    if kinds.get("general.alignment") != _U32 or not value or value & (value - 1):
        raise r.fail(f"GGUF 'general.alignment' = {_short(value)}: expected a u32 power of two")
    return value


class _Tensors:
    """The tensor descriptors, checked and summed one at a time."""

    def __init__(self, r: _Reader) -> None:
        self.r, self.names = r, set()
        self.params, self.offset, self.types = 0, 0, {}
        self.has_output, self.max_block, self.last_end, self.split_experts = False, -1, 0, 0
        self.expert_dims: set[int] = set()
        """Experts a merged expert tensor holds (its third dimension), or a split one's index + 1."""

    def read(self, alignment: int) -> None:
        r = self.r
        name = r.string("tensor name", most=MAX_NAME_BYTES)
        if name in self.names:
            raise r.fail(f"GGUF tensor {_short(name)} appears twice: expected each name once")
        self.names.add(name)
        n_dims = r.scalar("<I")
        if n_dims > MAX_DIMS:
            raise r.fail(f"GGUF tensor {_short(name)} has {n_dims:,} dimensions: expected at most {MAX_DIMS}")
        dims = [r.scalar("<Q") for _ in range(n_dims)]
        numel = math.prod(dims)
        if any(d >= 2**63 for d in dims) or numel > MAX_PARAMS or self.params + numel > MAX_PARAMS:
            raise r.fail(f"GGUF tensor {_short(name)} of shape {dims} brings the header past {MAX_PARAMS_TEXT} "
                         f"parameters (the bound on parameters): corrupt")
        type_id = r.scalar("<I")
        kind = GGML_TYPES.get(type_id)
        if kind is None:
            raise r.fail(f"GGUF tensor {_short(name)} has ggml type {type_id}: expected a known ggml type "
                         f"({', '.join(f'{i} {n}' for i, n in list(GGML_TYPES.items())[:3])}, ... {max(GGML_TYPES)})")
        per_block, block_bytes = GGUF_BLOCKS[kind]
        row = dims[0] if dims else 1  # a tensor of no dimensions is one element, as ggml reads it
        if row % per_block:
            raise r.fail(f"GGUF tensor {_short(name)} of type {kind} has rows of {row:,} elements: expected a "
                         f"multiple of its {per_block}-element blocks")
        offset = r.scalar("<Q")
        if offset != self.offset:
            raise r.fail(f"GGUF tensor {_short(name)} has data offset {offset:,}: expected {self.offset:,} (tensors "
                         f"follow one another, each padded to {alignment} bytes)")
        nbytes = numel // per_block * block_bytes
        self.offset += -(-nbytes // alignment) * alignment
        self.params += numel
        self.types[kind] = self.types.get(kind, 0) + numel
        self.has_output = self.has_output or name == "output.weight"
        block = _BLOCK.match(name)
        if block:
            self.max_block = max(self.max_block, int(block[1]))
        if _EXPERTS.match(name):
            self.expert_dims.add(dims[2] if len(dims) > 2 else 1)
        elif (split := _SPLIT_EXPERT.match(name)) is not None:  # files before llama.cpp merged experts (2024)
            self.split_experts = max(self.split_experts, int(split[1]) + 1)
        self.last_end = offset + nbytes


def _check_experts(r: _Reader, metadata: dict[str, Any], t: _Tensors) -> None:
    """Expert tensors, expert counts and block indices agree with the architecture's metadata."""
    arch = metadata.get("general.architecture")
    if not isinstance(arch, str):
        return
    count, used = metadata.get(f"{arch}.expert_count"), metadata.get(f"{arch}.expert_used_count")
    blocks = metadata.get(f"{arch}.block_count")
    if used and not count:
        raise r.fail(f"GGUF '{arch}.expert_used_count' = {_short(used)} but '{arch}.expert_count' = {_short(count)}: "
                     f"expected experts for the ones used per token")
    held = t.expert_dims | ({t.split_experts} if t.split_experts else set())
    if held and held != {count}:
        raise r.fail(f"GGUF expert tensors hold {', '.join(map(str, sorted(held)))} experts but "
                     f"'{arch}.expert_count' = {_short(count)}: expected the same number")
    if count and t.max_block >= 0 and not held:
        raise r.fail(f"GGUF '{arch}.expert_count' = {_short(count)} but no tensor holds experts (blk.N.ffn_*_exps): "
                     f"expected expert tensors")
    if isinstance(blocks, int) and 0 <= t.max_block and t.max_block >= blocks:
        raise r.fail(f"GGUF tensor of block {t.max_block} but '{arch}.block_count' = {blocks}: expected blocks "
                     f"0 to {blocks - 1}")


def read_gguf_header(path: str | Path, *, prefix_of: int | None = None) -> GGUFHeader:
    """The header of a GGUF file: metadata and tensor descriptors, every one checked. With `prefix_of`, the
    file is the first bytes of a file of that many bytes (a header-only upload): the metadata and descriptors
    must lie whole inside it, and the tensor data they lay out inside the whole file; the data itself is not
    there to read."""
    path = Path(path)
    with open_regular(path, what="model file", error=IngestError) as opened:
        if prefix_of is not None and not opened.size <= prefix_of:
            raise IngestError(f"{path.name}: {opened.size:,} bytes, yet said to be the head of a file of "
                              f"{prefix_of:,}: expected a head no larger than the file")
        size = opened.size if prefix_of is None else prefix_of
        r = _Reader(opened, prefix_of)
        version, n_tensors, n_kv = _header_counts(r)
        kinds: dict[str, int] = {}
        metadata = _metadata_with_kinds(r, n_kv, kinds)
        alignment = _alignment(r, metadata, kinds)
        tensors = _Tensors(r)
        for _ in range(n_tensors):
            tensors.read(alignment)
        if n_tensors:
            start = -(-opened.fh.tell() // alignment) * alignment
            end = start + tensors.last_end
            if end > size:
                raise r.fail(f"GGUF tensor data ends at byte {end:,} but the file has {size:,} bytes: "
                             f"truncated (or only the header was copied)")
        _check_experts(r, metadata, tensors)
        check_unchanged(opened, IngestError)
    return GGUFHeader(path=str(path), version=version, metadata=metadata, tensor_count=n_tensors,
                      params=tensors.params, types=tensors.types, has_output=tensors.has_output,
                      data_bytes=tensors.offset, prefix_of=prefix_of)


def _metadata_with_kinds(r: _Reader, n_kv: int, kinds: dict[str, int]) -> dict[str, Any]:
    """`_metadata`, noting the value type of the keys whose type matters (general.alignment)."""
    metadata: dict[str, Any] = {}
    for _ in range(n_kv):
        key = r.string("key", most=MAX_KEY_BYTES)
        if not key:
            raise r.fail(f"GGUF key at offset {r.fh.tell() - 8:,} is empty: expected a name")
        if key in metadata:
            raise r.fail(f"GGUF key {_short(key)} appears twice: expected each key once")
        kind = r.scalar("<I")
        if key.startswith("general."):
            kinds[key] = kind
        metadata[key] = r.value(kind, key)
    return metadata


def stored_format(header: GGUFHeader) -> tuple[str, str]:
    """(sizeup format id, where it came from) of a GGUF file's weights: `general.file_type`, else the ggml
    type holding most parameters. The id is "" when the file's type is one sizeup has no format for."""
    file_type = header.metadata.get("general.file_type")
    if file_type is not None:
        if isinstance(file_type, bool) or not isinstance(file_type, int) or file_type not in LLAMA_FILE_TYPES:
            raise ConfigError(f"{header.path}: GGUF 'general.file_type' = {_short(file_type)}: expected a llama.cpp "
                              f"file type ({', '.join(f'{k} {v}' for k, v in list(LLAMA_FILE_TYPES.items())[:3])}, "
                              f"... {max(LLAMA_FILE_TYPES)})")
        fmt = GGUF_FILE_TYPES.get(file_type, "")
        return fmt, f"GGUF general.file_type = {file_type} ({LLAMA_FILE_TYPES[file_type]})"
    matrices = {k: v for k, v in header.types.items() if k not in ("F32",)} or header.types
    if not matrices:
        return "", "GGUF file with no general.file_type and no tensors"
    kind = max(sorted(matrices), key=matrices.get)
    share = matrices[kind] / max(sum(header.types.values()), 1)
    return _FORMAT_OF_TYPE.get(kind, ""), (f"GGUF tensor types (no general.file_type): {share:.0%} of the parameters "
                                           f"are {kind}")


_TOKENS = "tokenizer.ggml.tokens"


def gguf_config(header: GGUFHeader) -> tuple[dict[str, Any], dict[str, str]]:
    """The config.json fields a GGUF file's metadata gives, and for each the GGUF key it came from
    (values as stored: the config parser type- and range-checks them)."""
    arch_name = header.metadata.get("general.architecture")
    if not isinstance(arch_name, str) or arch_name not in GGUF_ARCHS:
        raise ConfigError(f"{header.path}: GGUF architecture {_short(arch_name)} is not supported (expected one of "
                          f"{', '.join(sorted(GGUF_ARCHS))})")
    config, sources = arch_config(header.path, arch_name, header.metadata)
    if "vocab_size" not in config:
        tokens = header.metadata.get(_TOKENS)
        if isinstance(tokens, list):
            config["vocab_size"] = len(tokens)
        elif isinstance(tokens, int) and not isinstance(tokens, bool):
            config["vocab_size"] = tokens
        elif tokens is not None:
            raise ConfigError(f"{header.path}: GGUF {_TOKENS!r} = {_short(tokens)}: expected an array of tokens")
        if tokens is not None:
            sources["vocab_size"] = f"length of {_TOKENS}"
    config["tie_word_embeddings"] = not header.has_output
    return config, sources


