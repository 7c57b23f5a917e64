"""Fuzzing the model readers (issue 14): config.json (mutations of the shipped presets), safetensors
headers and GGUF headers built byte by byte. The property: the reader returns a valid model or raises
a `SizeupError` subclass (never another exception), each example in under 5 s, and an estimate from
an accepted model gives finite numbers (or, itself, a `SizeupError`).

A fixed seed (`derandomize=True`), a few hundred examples per input kind.
"""

from __future__ import annotations

import codecs
import json
import math
import struct
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sizeup.errors import SizeupError
from sizeup.ingest.arch import ModelArch
from sizeup.ingest.headers import SAFETENSORS_DTYPE_BYTES, model_from_header, read_safetensors_header
from sizeup.ingest.hf_config import load_model
from sizeup.ingest.limits import MAX_PARAMS
from tests.ingest.model_files import PRESETS, gguf_string, preset_config, safetensors_bytes, safetensors_header

SECONDS_PER_EXAMPLE = 5.0
RSS_GROWTH_BYTES = 500 * 2**20
"""Most the process may grow while reading one example (issue 14: RSS under 500 MB)."""
EXAMPLES = 300
"""Per input kind."""
FUZZ = settings(derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
PRESET_NAMES = sorted(p.stem for p in PRESETS.glob("*.json"))
SMALL_CONFIG = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100, "tie_word_embeddings": True}


@pytest.fixture(scope="module")
def folder():
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def finite_numbers(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(finite_numbers(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(finite_numbers(v) for v in value)
    return True


def check_model(read, path: Path) -> ModelArch | None:
    """Run a reader under the property; an accepted model is estimated too."""
    from sizeup.api import estimate

    process = psutil.Process()
    rss, start = process.memory_info().rss, time.perf_counter()
    try:
        arch = read(path)
    except SizeupError as e:
        assert "\n" not in str(e), str(e)
        arch = None
    if arch is not None:
        assert isinstance(arch, ModelArch) and 0 < arch.params <= MAX_PARAMS and arch.num_layers >= 1
        try:
            result = estimate(str(path), device="rtx-4090", prompt=128, output=16)
        except SizeupError:
            pass
        else:
            assert finite_numbers(result.to_dict()), result.to_dict()
    assert time.perf_counter() - start < SECONDS_PER_EXAMPLE
    assert process.memory_info().rss - rss < RSS_GROWTH_BYTES
    return arch


# ---- config.json ------------------------------------------------------------------------------

ODD_VALUES = st.one_of(
    st.sampled_from([0, -1, 1, 2, 3, 7, 1000, 1001, 2**31, 2**63, 2**64 - 1, 2**70, 10**12, 32 * 10**400, -2**63]),
    st.integers(-10**6, 10**7),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.booleans(),
    st.none(),
    st.lists(st.integers(-5, 100), max_size=5),
    st.dictionaries(st.text(max_size=4), st.integers(-3, 3), max_size=3),
)


def key_paths(config: dict) -> list[tuple[str, ...]]:
    paths = [(k,) for k in config]
    for k, v in config.items():
        if isinstance(v, dict):
            paths += [(k, inner) for inner in v]
    return paths or [("model_type",)]


@st.composite
def mutated_configs(draw) -> bytes:
    preset = draw(st.sampled_from(PRESET_NAMES))
    config = preset_config(preset)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(key_paths(config) + [("new_field",)]))
        parent = config
        for k in path[:-1]:
            parent = parent[k]
        key = path[-1]
        action = draw(st.sampled_from(["set", "set", "set", "delete", "nest"]))
        if action == "delete":
            parent.pop(key, None)
        elif action == "nest":
            value = parent.get(key)
            for _ in range(draw(st.integers(1, 40))):
                value = [value]
            parent[key] = value
        else:
            parent[key] = draw(ODD_VALUES)
    text = json.dumps(config, allow_nan=True, ensure_ascii=draw(st.booleans()))
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "utf-8", "utf-8-sig", "utf-16", "latin-1"]))
    try:
        return text.encode(encoding)
    except UnicodeEncodeError:
        return text.encode("utf-8")


@settings(FUZZ, max_examples=EXAMPLES)
@given(raw=mutated_configs())
def test_fuzz_config_json(folder, raw):
    path = folder / "config" / "config.json"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(raw)
    check_model(lambda p: load_model(str(p)), path)


# ---- safetensors ------------------------------------------------------------------------------

JUNK = st.one_of(st.integers(-2**64, 2**64), st.floats(allow_nan=False), st.text(max_size=6), st.booleans(),
                 st.none(), st.lists(st.integers(-3, 3), max_size=3), st.dictionaries(st.text(max_size=3),
                                                                                      st.integers(), max_size=2))
DTYPES = st.one_of(st.sampled_from(sorted(SAFETENSORS_DTYPE_BYTES)), JUNK)
SHAPES = st.one_of(st.lists(st.integers(-3, 2**64), max_size=6), st.lists(st.integers(0, 64), max_size=4), JUNK)
OFFSETS = st.one_of(st.lists(st.integers(-10, 10**5), max_size=3), st.tuples(st.integers(0, 4096), st.integers(0, 4096))
                    .map(list), JUNK)
ENTRIES = st.one_of(st.fixed_dictionaries({"dtype": DTYPES, "shape": SHAPES, "data_offsets": OFFSETS}), JUNK)


@st.composite
def safetensors_files(draw) -> bytes:
    if draw(st.booleans()):  # a valid layout, perhaps damaged below
        shapes = draw(st.dictionaries(st.text(max_size=12), st.lists(st.integers(0, 16), max_size=3)
                                      .map(tuple), max_size=8))
        header, data = safetensors_header(shapes)
    else:
        header = draw(st.dictionaries(st.text(max_size=8), ENTRIES, max_size=6))
        data = draw(st.integers(0, 4096))
    if draw(st.booleans()):
        header["__metadata__"] = draw(st.one_of(st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2),
                                                JUNK))
    raw = safetensors_bytes(json.dumps(header, allow_nan=True).encode(), data_bytes=data)
    damage = draw(st.sampled_from(["none", "none", "claim", "truncate", "flip"]))
    if damage == "claim":
        raw = struct.pack("<Q", draw(st.integers(0, 2**64 - 1))) + raw[8:]
    elif damage == "truncate":
        raw = raw[:draw(st.integers(0, len(raw)))]
    elif damage == "flip" and len(raw) > 8:
        i = draw(st.integers(8, len(raw) - 1))
        raw = raw[:i] + bytes([draw(st.integers(0, 255))]) + raw[i + 1:]
    return raw


@settings(FUZZ, max_examples=EXAMPLES)
@given(raw=safetensors_files())
def test_fuzz_safetensors_header(folder, raw):
    path = folder / "st" / "model.safetensors"
    path.parent.mkdir(exist_ok=True)
    (path.parent / "config.json").write_text(json.dumps(SMALL_CONFIG))
    path.write_bytes(raw)
    start = time.perf_counter()
    try:
        header = read_safetensors_header(path)
    except SizeupError as e:
        assert "\n" not in str(e)
    else:
        assert 0 <= header.params <= MAX_PARAMS and header.tensor_count >= 0
        assert sum(header.bytes_by_dtype.values()) <= len(raw)
    assert time.perf_counter() - start < SECONDS_PER_EXAMPLE
    check_model(model_from_header, path)


# ---- GGUF -------------------------------------------------------------------------------------

_FORMATS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_INTS = {"<B": (0, 255), "<b": (-128, 127), "<H": (0, 2**16 - 1), "<h": (-2**15, 2**15 - 1), "<I": (0, 2**32 - 1),
         "<i": (-2**31, 2**31 - 1), "<Q": (0, 2**64 - 1), "<q": (-2**63, 2**63 - 1)}
KEYS = ["general.architecture", "general.name", "llama.embedding_length", "llama.block_count",
        "llama.feed_forward_length", "llama.attention.head_count", "llama.attention.head_count_kv",
        "llama.context_length", "llama.attention.key_length", "llama.vocab_size", "llama.expert_count",
        "llama.expert_used_count", "llama.attention.sliding_window", "tokenizer.ggml.tokens", "qwen2.block_count"]
GOOD_KVS = [("general.architecture", 8, "llama"), ("llama.embedding_length", 4, 64), ("llama.block_count", 4, 2),
            ("llama.feed_forward_length", 4, 128), ("llama.attention.head_count", 4, 8),
            ("llama.attention.head_count_kv", 4, 2), ("llama.vocab_size", 4, 96)]


def scalar(draw, kind: int) -> bytes:
    fmt = _FORMATS[kind]
    if fmt in _INTS:
        lo, hi = _INTS[fmt]
        value = draw(st.one_of(st.integers(lo, hi), st.sampled_from([max(lo, 0), min(hi, 2), min(hi, 64), hi])))
    elif fmt == "<?":
        value = draw(st.booleans())
    else:
        value = draw(st.floats(allow_nan=True, allow_infinity=True, width=32 if fmt == "<f" else 64))
    return struct.pack(fmt, value)


def payload(draw, kind: int) -> bytes:
    if kind in _FORMATS:
        return scalar(draw, kind)
    if kind == 8:
        return gguf_string(draw(st.sampled_from(["llama", "qwen2", "tiny", ""])) if draw(st.booleans())
                           else draw(st.binary(max_size=12)))
    if kind == 9:
        inner = draw(st.sampled_from([4, 8, 6, 9, 13]))
        count = draw(st.integers(0, 6))
        claimed = draw(st.one_of(st.just(count), st.integers(0, 2**64 - 1)))
        items = b"".join(payload(draw, inner) if inner != 9 else b"" for _ in range(count))
        return struct.pack("<IQ", inner, claimed) + items
    return draw(st.binary(max_size=16))


def mostly(draw, usual: Any, other: st.SearchStrategy) -> Any:
    """`usual` about nine times in ten, else a draw from `other` (hypothesis favours the ends of a range,
    so the rare branch is a middle value)."""
    return draw(other) if draw(st.integers(0, 9)) == 5 else usual


@st.composite
def gguf_files(draw) -> bytes:
    kvs = {k: struct.pack("<I", kind) + payload_for(kind, v) for k, kind, v in GOOD_KVS} if mostly(
        draw, True, st.booleans()) else {}
    for _ in range(draw(st.integers(0, 4))):  # change or add a key: another value, another type, garbage
        key = draw(st.one_of(st.sampled_from(KEYS), st.text(max_size=10)))
        kind = mostly(draw, draw(st.sampled_from([4, 10, 8, 9, 6, 7, 5, 11])), st.integers(0, 15))
        kvs[key] = struct.pack("<I", kind) + payload(draw, kind)
    tensors = []
    for _ in range(draw(st.integers(0, 4))):
        name = draw(st.sampled_from(["token_embd.weight", "output.weight", "blk.0.attn_q.weight", "x"]))
        dims = draw(st.lists(st.integers(0, 4096), max_size=3)) if mostly(draw, True, st.booleans()) else draw(
            st.lists(st.integers(0, 2**64 - 1), max_size=10))
        tensors.append(gguf_string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
                       + struct.pack("<IQ", draw(st.integers(0, 40)), draw(st.integers(0, 2**64 - 1))))
    version = mostly(draw, 3, st.sampled_from([2, 1, 4, 2**32 - 1]))
    n_tensors = mostly(draw, len(tensors), st.integers(0, 2**64 - 1))
    n_kv = mostly(draw, len(kvs), st.integers(0, 2**64 - 1))
    raw = (b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv) + b"".join(gguf_string(k) + v for k, v in kvs.items())
           + b"".join(tensors) + b"\0" * 32)
    if not mostly(draw, True, st.booleans()):
        raw = raw[:draw(st.integers(0, len(raw)))]
    return raw


def payload_for(kind: int, value: Any) -> bytes:
    return gguf_string(value) if kind == 8 else struct.pack(_FORMATS[kind], value)


@settings(FUZZ, max_examples=EXAMPLES)
@given(raw=gguf_files())
def test_fuzz_gguf_header(folder, raw):
    path = folder / "gguf" / "model.gguf"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(raw)
    check_model(model_from_header, path)


def test_the_strategies_reach_accepted_models(folder):
    """The suite must exercise the success path, not only the errors: a preset config and a valid
    GGUF built the same way are accepted and estimated."""
    path = folder / "ok" / "config.json"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(codecs.BOM_UTF8 + json.dumps(preset_config("qwen3-30b-a3b")).encode())
    assert check_model(lambda p: load_model(str(p)), path) is not None
    gguf = folder / "ok" / "m.gguf"
    kvs = b"".join(gguf_string(k) + struct.pack("<I", kind) + payload_for(kind, v) for k, kind, v in GOOD_KVS)
    gguf.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(GOOD_KVS)) + kvs)
    assert check_model(model_from_header, gguf) is not None
