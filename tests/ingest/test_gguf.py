"""GGUF headers (ingest/gguf.py): the weight format a file stores, layouts llama.cpp accepts, and a file that
changes while it is read. The malformed headers are in tests/fuzz/hostile_cases.py (GGUF_CASES), refused by the
library and the CLI in tests/fuzz/test_hostile_inputs.py."""

from __future__ import annotations

import contextlib
import json

import pytest

from sizeup.api import estimate
from sizeup.cli.main import main
from sizeup.errors import ConfigError, IngestError
from sizeup.formats import FORMATS, GGML_TYPES, GGUF_BLOCKS
from sizeup.ingest import gguf
from sizeup.ingest.gguf import GGUF_FILE_TYPES, LLAMA_FILE_TYPES, read_gguf_header
from sizeup.ingest.headers import model_from_header
from tests.ingest.model_files import ARRAY, STRING, U32, llama_gguf

F32, F16, Q8_0 = 0, 1, 8


def write(tmp_path, raw: bytes, name: str = "m.gguf"):
    path = tmp_path / name
    path.write_bytes(raw)
    return path


def test_the_tables_name_only_formats_and_types_sizeup_has():
    assert set(GGUF_FILE_TYPES) <= set(LLAMA_FILE_TYPES) and set(GGUF_FILE_TYPES.values()) <= set(FORMATS)
    assert set(GGML_TYPES.values()) <= set(GGUF_BLOCKS)
    assert set(gguf._FORMAT_OF_TYPE.values()) <= set(FORMATS)


def test_a_q4_k_m_file_is_priced_as_q4_k_m_and_says_so(tmp_path):
    """llama.cpp's LLAMA_FTYPE_MOSTLY_Q4_K_M is 15 (llama.h; gguf-py LlamaFileType)."""
    path = write(tmp_path, llama_gguf({"general.file_type": (U32, 15)}))
    arch = model_from_header(path)
    assert (arch.stored_format, arch.stored_format_from) == ("q4_k_m", "GGUF general.file_type = 15 (MOSTLY_Q4_K_M)")
    result = estimate(str(path), device="rtx-4090", prompt=64, output=16)
    assert result.weights.id == "q4_k_m"
    assert any("the format the file stores (GGUF general.file_type = 15 (MOSTLY_Q4_K_M)" in a for a in result.assumptions)
    bf16 = estimate(str(path), device="rtx-4090", quant="bf16", prompt=64, output=16)
    assert result.memory.weights_bytes < bf16.memory.weights_bytes
    assert any("weights priced as bf16 (--quant), not as the q4_k_m the file stores" in a for a in bf16.assumptions)


def test_an_mxfp4_moe_file_reads_as_mxfp4_moe(tmp_path):
    """LLAMA_FTYPE_MOSTLY_MXFP4_MOE is 38 (llama.h): gpt-oss's GGUFs (experts MXFP4, other matrices Q8_0)."""
    path = write(tmp_path, llama_gguf({"general.file_type": (U32, 38)}))
    arch = model_from_header(path)
    assert (arch.stored_format, arch.stored_format_from) == ("mxfp4_moe", "GGUF general.file_type = 38 (MOSTLY_MXFP4_MOE)")


def test_the_cli_prices_the_stored_format(tmp_path, capsys):
    path = write(tmp_path, llama_gguf({"general.file_type": (U32, 7)}))  # MOSTLY_Q8_0
    assert main(["estimate", str(path), "--device", "rtx-4090", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["config"]["quant"] == "q8_0"
    assert any("GGUF general.file_type = 7 (MOSTLY_Q8_0)" in a for a in data["assumptions"])


def test_without_a_file_type_the_format_comes_from_the_tensor_types(tmp_path):
    tensors = [("token_embd.weight", (64, 96), Q8_0), ("output.weight", (64, 96), Q8_0), ("output_norm.weight", (64,), F32)]
    arch = model_from_header(write(tmp_path, llama_gguf(tensors=tensors)))
    assert arch.stored_format == "q8_0"
    assert arch.stored_format_from == "GGUF tensor types (no general.file_type): 99% of the parameters are Q8_0"


def test_a_file_type_sizeup_cannot_price_asks_for_quant(tmp_path):
    path = write(tmp_path, llama_gguf({"general.file_type": (U32, 19)}))  # MOSTLY_IQ2_XXS
    with pytest.raises(ConfigError, match=r"general.file_type = 19 \(MOSTLY_IQ2_XXS\), a weight format sizeup does "
                                          r"not price: expected --quant"):
        estimate(str(path), device="rtx-4090")
    assert estimate(str(path), device="rtx-4090", quant="q4_k_m", prompt=64, output=16).weights.id == "q4_k_m"


def test_merged_and_split_expert_tensors_matching_the_count_are_read(tmp_path):
    moe = {"llama.expert_count": (U32, 4), "llama.expert_used_count": (U32, 2)}
    merged = [("token_embd.weight", (64, 96), F16), ("blk.0.ffn_gate_exps.weight", (64, 176, 4), F16)]
    split = [("token_embd.weight", (64, 96), F16)] + [(f"blk.1.ffn_up.{e}.weight", (64, 176), F16) for e in range(4)]
    for i, tensors in enumerate((merged, split)):
        arch = model_from_header(write(tmp_path, llama_gguf(moe, tensors), f"m{i}.gguf"))
        assert arch.model_type == "mixtral" and arch.layers[0].mlp.experts == 4


def test_a_wider_alignment_is_followed(tmp_path):
    header = read_gguf_header(write(tmp_path, llama_gguf({"general.alignment": (U32, 256)}, alignment=256)))
    assert header.data_bytes == 12_288 + 6_656  # F16 64 x 96; Q8_0 64 x 96 (6,528 bytes) padded to 256


def test_long_strings_and_arrays_are_skipped_not_held(tmp_path):
    big = {"tokenizer.chat_template": (STRING, "x" * (gguf.MAX_STRING_BYTES + 1)),
           "tokenizer.ggml.scores": (ARRAY, (U32, list(range(gguf.MAX_LISTED + 1))))}
    header = read_gguf_header(write(tmp_path, llama_gguf(big)))
    assert header.metadata["tokenizer.chat_template"] == gguf.MAX_STRING_BYTES + 1
    assert header.metadata["tokenizer.ggml.scores"] == gguf.MAX_LISTED + 1


def test_a_file_cut_short_while_it_is_read_is_refused(tmp_path, monkeypatch):
    """Another process truncates the file after sizeup opened it: a short read, refused in one line."""
    path = write(tmp_path, llama_gguf())
    real = gguf.open_regular

    @contextlib.contextmanager
    def truncating(*args, **kwargs):
        with real(*args, **kwargs) as opened:
            with open(path, "r+b") as other:
                other.truncate(100)
            yield opened

    monkeypatch.setattr(gguf, "open_regular", truncating)
    with pytest.raises(IngestError, match=r"m.gguf' changed while it was read \(20,384 bytes when opened, 100 now\)"):
        read_gguf_header(path)


def test_a_tensor_of_no_dimensions_is_one_element_and_must_fill_its_block(tmp_path):
    """ggml reads n_dims = 0 as a row of 1 element: a Q5_0 tensor (32-element blocks) of no dimensions is refused as
    llama.cpp's loader refuses it, not skipped by a row check that looked only at a first dimension."""
    path = tmp_path / "m.gguf"
    path.write_bytes(llama_gguf(tensors=[("token_embd.weight", (), 6), ("output.weight", (64, 96), 8)]))
    with pytest.raises(IngestError, match="'token_embd.weight' of type Q5_0 has rows of 1 elements: expected a "
                                          "multiple of its 32-element blocks"):
        read_gguf_header(path)


def test_a_negative_block_count_is_named_as_such_not_as_a_tensor_past_it(tmp_path):
    path = tmp_path / "m.gguf"
    path.write_bytes(llama_gguf({"llama.block_count": (5, -1)}))  # i32
    with pytest.raises(ConfigError) as info:
        model_from_header(path)
    assert "'llama.block_count') = -1: expected a positive integer" in str(info.value)


def _big_gguf() -> bytes:
    """A GGUF file of ~34 MB (one 2048 × 8192 F16 tensor): its head of 8 MiB holds the whole header."""
    return llama_gguf({"llama.embedding_length": (U32, 2048), "llama.block_count": (U32, 16),
                       "llama.feed_forward_length": (U32, 8192), "llama.attention.head_count": (U32, 32),
                       "llama.attention.head_count_kv": (U32, 8), "general.file_type": (U32, 1)},
                      tensors=[("token_embd.weight", (2048, 96), 1), ("blk.0.ffn_up.weight", (2048, 8192), 1)])


def test_the_head_of_a_file_is_read_only_when_said_to_be_one(tmp_path):
    """The UI sends the first 8 MiB of a large .gguf file and its size: read as that file's head, everything there
    is checked; a head not said to be one stays a truncated file."""
    raw = _big_gguf()
    head = tmp_path / "head.gguf"
    head.write_bytes(raw[:8 * 2**20])
    with pytest.raises(IngestError, match="truncated"):
        read_gguf_header(head)
    header = read_gguf_header(head, prefix_of=len(raw))
    assert header.prefix_of == len(raw) and header.params == read_gguf_header(_write(tmp_path, raw)).params
    with pytest.raises(IngestError, match=f"ends at byte {len(raw):,} but the file has {len(raw) - 1:,} bytes"):
        read_gguf_header(head, prefix_of=len(raw) - 1)  # the data laid out must still fit in the whole file
    with pytest.raises(IngestError, match="yet said to be the head of a file of 100: expected a head no larger"):
        read_gguf_header(head, prefix_of=100)
    head.write_bytes(raw[:200])
    with pytest.raises(IngestError, match=r"header runs past the first 200 bytes uploaded \(of a [\d,]+-byte file.*"
                                          r"`sizeup estimate FILE` on the command line reads any header"):
        read_gguf_header(head, prefix_of=len(raw))


def _write(folder, raw: bytes):
    path = folder / "whole.gguf"
    path.write_bytes(raw)
    return path
