"""Hostile inputs for the readers (issue 27, strict readers): small files built byte by byte, each with the
command a user would type, the library call that reads the same file, the error class and the words the one-line
refusal must hold (the value, or the field and the value). `tests/fuzz/test_hostile_inputs.py` runs every case
through both; the suites that mirror the package reuse them by kind."""

from __future__ import annotations

import copy
import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sizeup.errors import CatalogError, ConfigError, IngestError, SizeupError
from tests.ingest.model_files import (F32, STRING, U32, U64, gguf_bytes, llama_gguf, preset_config, safetensors_bytes,
                                      safetensors_header)

DEVICE = "rtx-4090"
F16, Q8_0, Q4_K = 1, 8, 12


@dataclass(frozen=True)
class Case:
    id: str
    kind: str
    """gguf | safetensors | config | catalog"""
    write: Callable[[Path], list[str]]
    """Writes the case's files under a folder; returns the sizeup command line (without `sizeup`)."""
    read: Callable[[Path], Any]
    """The library call on the same files."""
    error: type[SizeupError]
    says: str

    def __str__(self) -> str:
        return self.id


# ---- GGUF ---------------------------------------------------------------------------------------------------------

def _gguf(raw: bytes) -> tuple[Callable[[Path], list[str]], Callable[[Path], Any]]:
    from sizeup.ingest.headers import model_from_header

    def write(folder: Path) -> list[str]:
        (folder / "m.gguf").write_bytes(raw)
        return ["estimate", str(folder / "m.gguf"), "--device", DEVICE]

    return write, lambda folder: model_from_header(folder / "m.gguf")


def gguf_case(id: str, raw: bytes, says: str, error: type[SizeupError] = IngestError) -> Case:
    write, read = _gguf(raw)
    return Case(id, "gguf", write, read, error, says)


_EMBED = ("token_embd.weight", (64, 96), F16)
_TINY = llama_gguf()
_INFOS_START = len(llama_gguf(tensors=[]))

GGUF_CASES = [
    gguf_case("5-dims", llama_gguf(tensors=[("token_embd.weight", (64, 96, 1, 1, 1), F16)]),
              "'token_embd.weight' has 5 dimensions: expected at most 4"),
    gguf_case("removed-type-4", llama_gguf(tensors=[("token_embd.weight", (64, 96), 4)]),
              "'token_embd.weight' has ggml type 4: expected a known ggml type"),
    gguf_case("unknown-type-99", llama_gguf(tensors=[("token_embd.weight", (64, 96), 99)]), "has ggml type 99"),
    gguf_case("data-past-the-end", llama_gguf(data=False),
              "GGUF tensor data ends at byte 20,384 but the file has 1,568 bytes"),
    gguf_case("offsets-overlap", llama_gguf(offsets=[0, 0]),
              "'output.weight' has data offset 0: expected 12,288"),
    gguf_case("offset-misaligned", llama_gguf(offsets=[0, 12_300]), "has data offset 12,300: expected 12,288"),
    gguf_case("offset-past-2**63", llama_gguf(offsets=[0, 2**64 - 1]), "has data offset 18,446,744,073,709,551,615"),
    gguf_case("duplicate-tensor", llama_gguf(tensors=[_EMBED, _EMBED]),
              "tensor 'token_embd.weight' appears twice"),
    gguf_case("duplicate-key", gguf_bytes([("general.architecture", STRING, "llama"), ("llama.block_count", U32, 2),
                                           ("llama.block_count", U32, 80)], []),
              "key 'llama.block_count' appears twice"),
    gguf_case("empty-key", gguf_bytes([("", U32, 1)], []), "is empty: expected a name"),
    gguf_case("name-64-bytes", llama_gguf(tensors=[("t" * 64, (64, 96), F16)]),
              "tensor name of 64 bytes at offset"),
    gguf_case("alignment-3", llama_gguf({"general.alignment": (U32, 3)}),
              "'general.alignment' = 3: expected a u32 power of two"),
    gguf_case("alignment-u64", llama_gguf({"general.alignment": (U64, 32)}),
              "'general.alignment' = 32: expected a u32 power of two"),
    gguf_case("tensor-count-2**40", llama_gguf(n_tensors=2**40), "claims 1,099,511,627,776 tensors"),
    gguf_case("experts-mismatch", llama_gguf({"llama.expert_count": (U32, 8), "llama.expert_used_count": (U32, 2)},
                                             [_EMBED, ("blk.0.ffn_gate_exps.weight", (64, 176, 4), F16)]),
              "expert tensors hold 4 experts but 'llama.expert_count' = 8"),
    gguf_case("used-without-experts", llama_gguf({"llama.expert_count": (U32, 0),
                                                  "llama.expert_used_count": (U32, 8)}),
              "'llama.expert_used_count' = 8 but 'llama.expert_count' = 0"),
    gguf_case("experts-without-tensors", llama_gguf({"llama.expert_count": (U32, 8), "llama.expert_used_count": (U32, 2)},
                                                    [_EMBED, ("blk.0.ffn_gate.weight", (64, 176), F16)]),
              "'llama.expert_count' = 8 but no tensor holds experts"),
    gguf_case("block-past-count", llama_gguf(tensors=[_EMBED, ("blk.7.attn_norm.weight", (64,), 0)]),
              "tensor of block 7 but 'llama.block_count' = 2"),
    gguf_case("q4k-rows-of-64", llama_gguf(tensors=[("output.weight", (64, 96), Q4_K)]),
              "'output.weight' of type Q4_K has rows of 64 elements: expected a multiple of its 256-element blocks"),
    gguf_case("file-type-999", llama_gguf({"general.file_type": (U32, 999)}),
              "GGUF 'general.file_type' = 999: expected a llama.cpp file type", ConfigError),
    gguf_case("file-type-string", llama_gguf({"general.file_type": (STRING, "Q4_K_M")}),
              "'general.file_type' = 'Q4_K_M'", ConfigError),
    gguf_case("cut-in-the-infos", _TINY[:_INFOS_START + 30], "truncated or corrupt"),
    gguf_case("big-endian", llama_gguf(version=0x03000000), "a big-endian file"),
    gguf_case("version-1", llama_gguf(version=1), "GGUF version 1 is not supported"),
    gguf_case("value-type-13", b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1) + b"k"
              + struct.pack("<I", 13) + b"\0" * 32, "GGUF key 'k' has value type 13"),
    gguf_case("float-layers", llama_gguf({"llama.block_count": (F32, 2.0)}),
              "field 'num_hidden_layers' (GGUF 'llama.block_count') = 2.0", ConfigError),
]


# ---- safetensors --------------------------------------------------------------------------------------------------

def safetensors_case(id: str, header: dict | bytes, data_bytes: int, says: str, claim: int | None = None,
                     sparse: int = 0) -> Case:
    from sizeup.ingest.headers import read_safetensors_header

    def write(folder: Path) -> list[str]:
        config = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4,
                  "intermediate_size": 128, "vocab_size": 100, "tie_word_embeddings": True}
        (folder / "config.json").write_text(json.dumps(config))
        path = folder / "model.safetensors"
        path.write_bytes(safetensors_bytes(header, data_bytes=data_bytes, claim=claim))
        if sparse:
            with open(path, "r+b") as fh:
                fh.truncate(sparse)  # a hole: the size without the disk
        return ["estimate", str(path), "--device", DEVICE]

    return Case(id, "safetensors", write, lambda folder: read_safetensors_header(folder / "model.safetensors"),
                IngestError, says)


def _entry(begin: int, end: int) -> dict:
    return {"dtype": "F16", "shape": [(end - begin) // 2], "data_offsets": [begin, end]}


SAFETENSORS_CASES = [
    safetensors_case("overlap", {"a": _entry(0, 8), "b": _entry(4, 8), "c": _entry(8, 12)}, 16,
                     "two tensors claim data bytes from 4 to 8"),
    safetensors_case("same-bytes-twice", {"a": _entry(0, 8), "b": _entry(0, 8)}, 16, "claim data bytes from 0 to 8"),
    safetensors_case("duplicate-name", b'{"w":' + json.dumps(_entry(0, 4)).encode() + b',"w":'
                     + json.dumps(_entry(4, 8)).encode() + b"}", 8, "tensor 'w' appears twice"),
    safetensors_case("duplicate-name-compact", b'{"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},'
                     b'"w":{"dtype":"F16","shape":[2],"data_offsets":[4,8]}}', 8, "tensor 'w' appears twice"),
    safetensors_case("gap", {"a": _entry(0, 4), "b": _entry(8, 12)}, 12, "data bytes [4, 8) belong to no tensor"),
    safetensors_case("trailing-bytes", {"a": _entry(0, 4)}, 9,
                     "the tensors end at data byte 4 but the file holds 9 data bytes"),
    safetensors_case("offsets-past-the-end", {"a": _entry(0, 4096)}, 8, "data offsets [0, 4096] do not match"),
    safetensors_case("header-length-past-the-file", {"a": _entry(0, 4)}, 4, "claims 1,000,000,000 bytes",
                     claim=10**9),
    safetensors_case("header-over-100-MiB", {"a": _entry(0, 4)}, 4, "claims 104,857,601 bytes",
                     claim=100 * 2**20 + 1, sparse=100 * 2**20 + 64),
]


# ---- config.json: present but wrong ------------------------------------------------------------------------------

def config_case(id: str, preset: str, change: dict[str, Any], says: str) -> Case:
    from sizeup.ingest.hf_config import load_model

    def write(folder: Path) -> list[str]:
        config = copy.deepcopy(preset_config(preset)) if not preset.endswith(".json") else json.loads(
            (Path(__file__).resolve().parents[1] / "ingest" / "configs" / preset).read_text())
        config.update(change)
        (folder / "config.json").write_text(json.dumps(config))
        return ["estimate", str(folder / "config.json"), "--device", DEVICE]

    return Case(id, "config", write, lambda folder: load_model(str(folder / "config.json")), ConfigError, says)


CONFIG_CASES = [
    config_case("layer_types-short", "gpt-oss-20b", {"layer_types": ["full_attention"] * 3},
                "field 'layer_types' = ['full_attention', 'full_attention', 'full_attention']: 3 items: expected "
                "one per layer (num_hidden_layers = 24)"),
    config_case("layer_types-unknown", "gpt-oss-20b", {"layer_types": ["sliding_attention", "chunked"] * 12},
                "item 1 is 'chunked': expected each item to be 'full_attention' or 'sliding_attention'"),
    config_case("layer_types-on-llama", "llama-3.2-1b", {"layer_types": ["full_attention"] * 15},
                "15 items: expected one per layer (num_hidden_layers = 16)"),
    config_case("sliding-without-window", "llama-3.2-1b", {"layer_types": ["sliding_attention"] * 16},
                "field 'sliding_window' = None: expected a window length"),
    config_case("deepseek-0-experts", "deepseek-v3", {"n_routed_experts": 0},
                "field 'num_experts_per_tok' = 8: expected a layer with routed experts to pick them from "
                "(n_routed_experts = 0"),
    config_case("deepseek-dense-past-layers", "deepseek-v3", {"first_k_dense_replace": 99},
                "first_k_dense_replace = 99 is more than num_hidden_layers = 61"),
    config_case("deepseek-topk-method", "deepseek-v3", {"topk_method": "noaux"},
                "field 'topk_method' = 'noaux': expected one of 'greedy', 'group_limited_greedy', 'noaux_tc'"),
    config_case("qwen-moe-0-experts", "qwen3-30b-a3b", {"num_experts": 0}, "(num_experts = 0"),
    config_case("dense-family-with-experts", "llama-3.2-1b", {"num_local_experts": 8},
                "field 'num_local_experts' = 8: expected no experts: the llama family reads a dense model"),
    config_case("unknown-activation", "llama-3.2-1b", {"hidden_act": "swishy"},
                "field 'hidden_act' = 'swishy': expected an activation transformers knows"),
    config_case("t5-unknown-activation", "flan-t5-xl.json", {"feed_forward_proj": "gated-foo"},
                "field 'feed_forward_proj' = 'gated-foo'"),
    config_case("vision-feature-layer-99", "llava-1.5-7b-hf.json", {"vision_feature_layer": 99},
                "field 'vision_feature_layer' = 99: expected a layer index from -25 to 24"),
    config_case("vision-feature-layers-bad", "llava-1.5-7b-hf.json", {"vision_feature_layer": [-2, "x"]},
                "field 'vision_feature_layer' = [-2, 'x']"),
    config_case("mistral3-feature-layer", "mistral-small-3.1-24b-instruct-2503.json", {"vision_feature_layer": -26},
                "field 'vision_feature_layer' = -26"),
    config_case("select-strategy", "llava-1.5-7b-hf.json", {"vision_feature_select_strategy": "fulll"},
                "field 'vision_feature_select_strategy' = 'fulll': expected one of 'default', 'full'"),
    config_case("modernbert-layer-types", "modernbert-large-zeroshot-v2.0.json", {"layer_types": ["global"] * 28},
                "item 0 is 'global'"),
]


# ---- catalog files (--catalog DIR) --------------------------------------------------------------------------------

_DEVICE = {"id": "mydev", "name": "My Device", "vendor": "nvidia", "kind": "gpu", "memory_gib": 24,
           "memory_bandwidth_gb_per_s": 1000, "dense_tflops": {"bf16": 100, "fp16": 100},
           "source": "a test", "retrieved": "2026-12-04"}


def catalog_case(id: str, line: tuple[str, str], says: str, offer: str | None = None) -> Case:
    """A device file with one top-level `key: value` line written as YAML text (so .inf and .nan stay YAML's)."""
    from sizeup.hardware.catalog import load_catalog

    def write(folder: Path) -> list[str]:
        import yaml

        device = {k: v for k, v in _DEVICE.items() if k not in line[0].split(".")}
        text = yaml.safe_dump(device, sort_keys=False)
        if "." in line[0]:  # a nested rate: dense_tflops.bf16
            parent, child = line[0].split(".")
            text += f"{parent}:\n  {child}: {line[1]}\n"
        else:
            text += f"{line[0]}: {line[1]}\n"
        (folder / "catalog").mkdir(exist_ok=True)
        (folder / "catalog" / "mydev.yaml").write_text(text)
        if offer is not None:
            (folder / "catalog" / "acme.yaml").write_text(
                "provider: acme\ncurrency: USD\noffers:\n- {id: acme-1, instance: a1, gpu: mydev, gpu_count: 1, "
                f"region: x, on_demand_per_hour: {offer}, price_date: 2026-12-01, source: t, retrieved: 2026-12-04}}\n")
        return ["hw", "list", "--catalog", str(folder / "catalog")]

    return Case(id, "catalog", write, lambda folder: load_catalog([folder / "catalog"], include_user=False),
                CatalogError, says)


CATALOG_CASES = [
    catalog_case("bandwidth-inf", ("memory_bandwidth_gb_per_s", ".inf"),
                 "field 'memory_bandwidth_gb_per_s' = inf: expected a finite number"),
    catalog_case("bandwidth-nan", ("memory_bandwidth_gb_per_s", ".nan"), "field 'memory_bandwidth_gb_per_s' = nan"),
    catalog_case("memory-1e300", ("memory_gib", "1.0e+300"), "field 'memory_gib' = 1e+300: expected a finite number"),
    catalog_case("memory-huge-int", ("memory_gib", "1" + "0" * 400), "field 'memory_gib' = a 401-digit number"),
    catalog_case("memory-negative-inf", ("memory_gib", "-.inf"), "field 'memory_gib' = -inf"),
    catalog_case("tflops-inf", ("dense_tflops.bf16", ".inf"), "field 'dense_tflops.bf16' = inf"),
    catalog_case("price-nan", ("memory_gib", "24"), "field 'offers[0].on_demand_per_hour' = nan", offer=".nan"),
]

ALL_CASES = GGUF_CASES + SAFETENSORS_CASES + CONFIG_CASES + CATALOG_CASES
