"""Model files read from their headers only, safely."""

import json
import struct

import pytest

from sizeup.errors import ConfigError, IngestError
from sizeup.ingest.headers import model_from_header, read_gguf_header, read_safetensors_header


def write_safetensors(path, tensors, claim=None):
    header, offset = {}, 0
    for name, shape in tensors.items():
        size = 2 * (shape[0] * shape[1] if len(shape) == 2 else shape[0])
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    header["__metadata__"] = {"format": "pt"}
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", claim if claim is not None else len(blob)) + blob + b"\0" * offset)
    return path


def test_safetensors_header_counts_parameters(tmp_path):
    path = write_safetensors(tmp_path / "m.safetensors", {"a.weight": (4, 8), "b.bias": (8,)})
    header = read_safetensors_header(path)
    assert header.params == 40 and header.bytes_by_dtype == {"BF16": 80}
    assert header.metadata == {"format": "pt"}


def test_safetensors_header_claiming_100_gb_is_refused_before_reading(tmp_path):
    path = write_safetensors(tmp_path / "m.safetensors", {"a.weight": (4, 8)}, claim=100 * 10**9)
    with pytest.raises(IngestError, match="claims 100,000,000,000 bytes"):
        read_safetensors_header(path)


def test_truncated_safetensors(tmp_path):
    path = write_safetensors(tmp_path / "m.safetensors", {"a.weight": (4, 8)})
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(IngestError, match="truncated or corrupt"):
        read_safetensors_header(path)
    (tmp_path / "x.safetensors").write_bytes(b"\x01\x02")
    with pytest.raises(IngestError, match="truncated safetensors"):
        read_safetensors_header(tmp_path / "x.safetensors")


def test_safetensors_without_config_says_what_is_missing(tmp_path):
    path = write_safetensors(tmp_path / "m.safetensors", {"a.weight": (4, 8)})
    with pytest.raises(ConfigError, match="put its config.json beside it"):
        model_from_header(path)


def write_gguf(path, n_tensors_claim=None):
    from tests.ingest.model_files import tiny_llama_gguf

    raw = tiny_llama_gguf()
    if n_tensors_claim is not None:
        raw = raw[:8] + struct.pack("<Q", n_tensors_claim) + raw[16:]
    path.write_bytes(raw)
    return path


def test_gguf_header_gives_architecture_and_types(tmp_path):
    path = write_gguf(tmp_path / "tiny.gguf")
    header = read_gguf_header(path)
    assert header.version == 3 and header.params == 2 * 64 * 96
    assert header.types == {"F16": 64 * 96, "Q8_0": 64 * 96}
    arch = model_from_header(path)
    assert (arch.hidden, arch.num_layers, arch.vocab) == (64, 2, 96)
    assert arch.layers[0].attention.kv_heads == 2 and not arch.tie_embeddings


def test_truncated_or_lying_gguf_is_refused(tmp_path):
    path = write_gguf(tmp_path / "tiny.gguf")
    data = path.read_bytes()
    (tmp_path / "cut.gguf").write_bytes(data[:200])
    with pytest.raises(IngestError, match="truncated or corrupt"):
        read_gguf_header(tmp_path / "cut.gguf")
    with pytest.raises(IngestError, match="more than"):
        read_gguf_header(write_gguf(tmp_path / "big.gguf", n_tensors_claim=10**15))
    (tmp_path / "not.gguf").write_bytes(b"GGML" + data[4:])
    with pytest.raises(IngestError, match="not a GGUF file"):
        read_gguf_header(tmp_path / "not.gguf")
