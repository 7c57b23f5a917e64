"""Hostile model files, regenerated from a seed: GGUF and safetensors headers mutated field by field and byte by
byte, ONNX graphs (reverse order, cycles, odd shapes, damaged bytes) and config.json files with a hostile value in
every numeric field of several families; each run through `estimate` (and `train`, `flops`, `roofline`) as a user
would type it."""

from __future__ import annotations

import copy
import json
import math
import random
import struct
from pathlib import Path

from tests.fuzz.redteam.common import DEVICE, HOSTILE_NUMBERS, hostile_name, sane_json, write
from tests.fuzz.redteam.runner import Case
from tests.ingest.model_files import (ARRAY, BOOL, F32, STRING, U32, U64, gguf_bytes, gguf_string, llama_gguf,
                                      preset_config, safetensors_bytes, safetensors_header)

CONFIGS = Path(__file__).resolve().parents[2] / "ingest" / "configs"
F16, Q8_0 = 1, 8

# ---- GGUF ---------------------------------------------------------------------------------------------------------

_GGUF_KEYS = ["llama.embedding_length", "llama.block_count", "llama.feed_forward_length", "llama.attention.head_count",
              "llama.attention.head_count_kv", "llama.context_length", "llama.rope.freq_base",
              "llama.attention.layer_norm_rms_epsilon", "llama.expert_count", "llama.expert_used_count",
              "llama.vocab_size", "llama.rope.dimension_count", "llama.attention.key_length",
              "general.file_type", "general.alignment", "general.quantization_version"]
_GGUF_VALUES = [(U32, 0), (U32, 2**32 - 1), (U64, 2**64 - 1), (U64, 2**40), (F32, float("nan")), (F32, float("inf")),
                (F32, -1.0), (F32, 1e38), (STRING, "12"), (BOOL, True), (ARRAY, (U32, [1, 2])), (5, -1), (11, -(2**63)),
                (12, float("nan")), (0, 255)]


def _gguf_argv(path: Path, rng: random.Random) -> list[str]:
    return rng.choice([["estimate", str(path), "--device", DEVICE, "--json"], ["estimate", str(path), "--json"],
                       ["estimate", str(path), "--device", DEVICE], ["estimate", str(path), "--device", "h100",
                                                                     "--engine", "llama.cpp", "--json"]])


def gguf_cases(rng: random.Random, folder: Path) -> list[Case]:
    cases = []
    for i in range(24):  # one field, one hostile value
        key = rng.choice(_GGUF_KEYS)
        kind, value = rng.choice(_GGUF_VALUES)
        path = write(folder / f"field{i}.gguf", llama_gguf({key: (kind, value)}))
        cases.append(Case(f"field-{key}={value!r}", "gguf", _gguf_argv(path, rng), check=sane_json))
    for i in range(16):  # a tensor descriptor
        dims = rng.choice([(0, 96), (64, 2**40), (2**63, 1), (64,) * 5, (), (64, 96, 0), (1,) * 4, (7, 96)])
        kind = rng.choice([F16, Q8_0, 0, 2, 3, 6, 12, 14, 30, 39, 40, 1000, 2**31, 2**32 - 1])
        name = rng.choice(["token_embd.weight", "output.weight", "blk.0.attn_q.weight", "blk.99999.ffn_up.weight",
                           "blk.-1.attn_k.weight", "\x1b[2J", "blk.0.ffn_gate_exps.weight", ""])
        small = math.prod(dims) < 10**6 and kind < 100  # else the header only: its data would take gigabytes
        raw = llama_gguf(tensors=[(name, dims, kind), ("output.weight", (64, 96), Q8_0)], data=small,
                         offsets=None if small else [0, 4096])
        path = write(folder / f"tensor{i}.gguf", raw)
        cases.append(Case(f"tensor-{name!r}-{dims}-{kind}", "gguf", _gguf_argv(path, rng), check=sane_json))
    base = llama_gguf()
    for i in range(14):  # bytes flipped at random
        raw = bytearray(base)
        for _ in range(rng.randint(1, 8)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        path = write(folder / f"flip{i}.gguf", bytes(raw))
        cases.append(Case(f"flipped-{i}", "gguf", _gguf_argv(path, rng), check=sane_json))
    for i, cut in enumerate(sorted(rng.sample(range(1, len(base)), 10))):  # truncated
        path = write(folder / f"cut{i}.gguf", base[:cut])
        cases.append(Case(f"cut-at-{cut}", "truncated", _gguf_argv(path, rng), expect="refuse"))
    counts = [(2**63, 0), (0, 2**63), (2**64 - 1, 2**64 - 1), (10**6, 0), (0, 10**6), (5, 0)]
    for n_tensors, n_kv in counts:
        raw = b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_kv) + b"\0" * 64
        path = write(folder / f"count{n_tensors}-{n_kv}.gguf", raw)
        cases.append(Case(f"counts-{n_tensors}-{n_kv}", "gguf", _gguf_argv(path, rng), expect="refuse"))
    for length in (2**63, 2**64 - 1, 2**40, 10**9):  # a string claiming more bytes than the file has
        raw = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", length) + b"k" * 16
        path = write(folder / f"strlen{length}.gguf", raw)
        cases.append(Case(f"string-length-{length}", "gguf", _gguf_argv(path, rng), expect="refuse"))
    for count in (2**62, 10**8):  # an array claiming more items than the file has
        raw = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gguf_string("a") + struct.pack("<IIQ", ARRAY, U32, count)
        path = write(folder / f"arr{count}.gguf", raw + b"\0" * 64)
        cases.append(Case(f"array-of-{count}", "gguf", _gguf_argv(path, rng), expect="refuse"))
    nested = struct.pack("<I", ARRAY)  # arrays of arrays, 2,000 deep
    body = b"".join(struct.pack("<IQ", ARRAY, 1) for _ in range(2000)) + struct.pack("<IQ", U32, 0)
    path = write(folder / "nested.gguf", b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gguf_string("a") + nested + body)
    cases.append(Case("arrays-2000-deep", "nested", _gguf_argv(path, rng)))
    for arch in ("\x1b[2Jllama", "x" * 100_000, "llama\x00", "", hostile_name(rng), "gpt2" * 5000):
        raw = gguf_bytes([("general.architecture", STRING, arch), ("general.name", STRING, hostile_name(rng))], [])
        path = write(folder / f"arch{len(arch)}.gguf", raw)
        cases.append(Case(f"architecture-{arch[:12]!r}x{len(arch)}", "gguf", _gguf_argv(path, rng), expect="refuse"))
    many = [(f"blk.{i // 9}.t{i % 9}.weight", (64,), 0) for i in range(40_000)]  # many tensors, many layers
    path = write(folder / "many-tensors.gguf", llama_gguf({"llama.block_count": (U32, 40_000 // 9 + 1)}, many))
    cases.append(Case("40k-tensors", "quadratic", _gguf_argv(path, rng), check=sane_json))
    vocab = llama_gguf({"tokenizer.ggml.tokens": (ARRAY, (STRING, ["t"] * 300_000))})
    path = write(folder / "vocab.gguf", vocab)
    cases.append(Case("300k-token-vocab", "quadratic", ["estimate", str(path), "--device", DEVICE, "--json"],
                      check=sane_json))
    return cases


# ---- safetensors ----------------------------------------------------------------------------------------------------

def _st_argv(path: Path, rng: random.Random) -> list[str]:
    return rng.choice([["estimate", str(path), "--device", DEVICE, "--json"], ["estimate", str(path), "--json"],
                       ["estimate", str(path), "--device", DEVICE]])


def _st_folder(folder: Path, name: str) -> Path:
    config = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4,
              "intermediate_size": 128, "vocab_size": 100, "tie_word_embeddings": True}
    write(folder / name / "config.json", json.dumps(config))
    return folder / name / "model.safetensors"


def safetensors_cases(rng: random.Random, folder: Path) -> list[Case]:
    cases = []
    header, size = safetensors_header({"model.embed_tokens.weight": (100, 64), "model.norm.weight": (64,)})
    for i in range(20):  # one entry field made hostile
        h = copy.deepcopy(header)
        entry = h[rng.choice(list(h))]
        field = rng.choice(["dtype", "shape", "data_offsets"])
        entry[field] = rng.choice([[-1, 4], [0, 2**64], [2**63, 2**63 + 2], [4, 0], "F16", "Q4", None, 1.5, [],
                                   [1] * 10_000, [2**40, 2**40], ["a"], [float("nan")], [True, False], {"a": 1},
                                   "\x1b[2J", [0, 0]])
        path = _st_folder(folder, f"entry{i}")
        write(path, safetensors_bytes(h, data_bytes=size))
        cases.append(Case(f"entry-{field}={entry[field]!r:.30}", "safetensors", _st_argv(path, rng), check=sane_json))
    raws = {
        "not-json": b"{not json", "array": b"[1,2,3]", "nan": b'{"a": NaN}', "utf16": '{"a":1}'.encode("utf-16"),
        "empty-object": b"{}", "metadata-only": b'{"__metadata__": {"format": "pt"}}',
        "metadata-hostile": json.dumps({"__metadata__": {"name": hostile_name(rng), "x": [1] * 1000}}).encode(),
        "deep": b"[" * 100_000 + b"]" * 100_000, "huge-int": b'{"a": {"dtype": "F16", "shape": [' + b"9" * 5000
        + b'], "data_offsets": [0, 2]}}', "null-bytes": b"\0" * 64, "bom": b"\xef\xbb\xbf{}",
        "escape-name": json.dumps({"\x1b[2J" + "w": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}}).encode(),
    }
    for name, raw in raws.items():
        path = _st_folder(folder, f"raw-{name}")
        write(path, safetensors_bytes(raw, data_bytes=4))
        cases.append(Case(f"header-{name}", "nested" if name == "deep" else "safetensors", _st_argv(path, rng),
                          expect="either" if name == "escape-name" else "refuse", check=sane_json))
    for claim in (0, 7, 2**63, 2**64 - 1, 2**32):  # the header length
        path = _st_folder(folder, f"claim{claim}")
        write(path, safetensors_bytes(header, data_bytes=size, claim=claim))
        cases.append(Case(f"length-{claim}", "safetensors", _st_argv(path, rng), expect="refuse"))
    full = safetensors_bytes(header, data_bytes=size)
    for cut in sorted(rng.sample(range(1, len(full)), 6)):
        path = _st_folder(folder, f"cut{cut}")
        write(path, full[:cut])
        cases.append(Case(f"cut-at-{cut}", "truncated", _st_argv(path, rng), expect="refuse"))
    many, total = safetensors_header({f"model.layers.{i}.w": (2,) for i in range(60_000)})  # many tensors
    path = _st_folder(folder, "many")
    write(path, safetensors_bytes(many, data_bytes=total))
    cases.append(Case("60k-tensors", "quadratic", _st_argv(path, rng), check=sane_json))
    return cases


# ---- ONNX -----------------------------------------------------------------------------------------------------------

def _chain(n: int, *, reverse: bool = False, dims: list | None = None, op: str = "Relu", cycle: bool = False,
           twice: bool = False, missing: bool = False, name: str = "") -> bytes:
    from onnx import TensorProto, helper

    nodes = [helper.make_node(op, [f"t{i}"], [f"t{i + 1}"], name=name or f"n{i}") for i in range(n)]
    if cycle:
        nodes[0].input[0] = f"t{n}"
    if twice and n > 1:
        nodes[1].output[0] = "t1" if n < 3 else "t2"
        nodes[0].output[0] = "t2"
    if missing:
        nodes[-1].input[0] = "nowhere"
    if reverse:
        nodes.reverse()
    shape = dims if dims is not None else ["batch", 64]
    graph = helper.make_graph(nodes, name or "g", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(f"t{n}", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString()


def onnx_cases(rng: random.Random, folder: Path) -> list[Case]:
    try:
        import onnx  # noqa: F401
    except ImportError:
        return []
    cases = []

    def add(id: str, raw: bytes, cls: str = "onnx", expect: str = "either", extra: tuple = ()):
        path = write(folder / f"{id}.onnx", raw)
        argv = rng.choice([["estimate", str(path), "--device", DEVICE, "--json"],
                           ["flops", str(path), "--dim", "batch=2", "--json"],
                           ["roofline", str(path), "--dim", "batch=2", "--device", "h100", "--json"]])
        cases.append(Case(id, cls, [*argv, *extra], expect=expect, check=sane_json))

    add("reverse-20000", _chain(20_000, reverse=True), "quadratic")
    add("forward-20000", _chain(20_000), "quadratic")
    add("cycle", _chain(5, cycle=True), expect="refuse")
    add("written-twice", _chain(4, twice=True), expect="refuse")
    add("input-from-nowhere", _chain(4, missing=True), expect="refuse")
    for dims in ([-1, 64], [0, 64], [2**62, 2**62], ["batch", 2**40], ["", 64], [1] * 64, ["\x1b[2J", 4]):
        add(f"dims-{dims[:2]!r}", _chain(3, dims=dims))
    add("unknown-op", _chain(3, op="NoSuchOp"))
    add("escape-node-names", _chain(3, name=hostile_name(rng)))
    raw = _chain(50)
    for i in range(8):
        mutated = bytearray(raw)
        for _ in range(rng.randint(1, 6)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        add(f"flipped-{i}", bytes(mutated))
    for cut in sorted(rng.sample(range(1, len(raw)), 4)):
        add(f"cut-at-{cut}", raw[:cut], "truncated")
    add("random-bytes", bytes(rng.randrange(256) for _ in range(4096)), expect="refuse")
    add("empty", b"", expect="refuse")
    for dim in ("batch=0", "batch=-1", "batch=nan", "batch=1e30", "batch=" + "9" * 5000, "batch", "=4",
                "nosuch=4", "batch=4=4"):
        path = write(folder / "dims.onnx", _chain(3))
        cases.append(Case(f"dim-flag-{dim[:20]}", "flags", ["flops", str(path), "--dim", dim, "--json"],
                          check=sane_json))
    return cases


# ---- config.json ------------------------------------------------------------------------------------------------------

_FAMILIES = ["llama-3.2-1b", "qwen3-30b-a3b", "deepseek-v3", "gpt-oss-20b", "gemma-3-1b", "phi-3-mini", "gpt2",
             "bert-base-uncased", "mamba-130m-hf.json", "flan-t5-xl.json", "llava-1.5-7b-hf.json",
             "whisper-tiny.json", "qwen2-vl-7b-instruct.json", "falcon-7b-instruct.json", "mixtral-8x7b"]
_CORE = {"hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "intermediate_size", "d_model",
         "num_layers", "n_layer", "n_head", "n_embd", "num_key_value_heads", "num_heads", "head_dim"}


def _config(preset: str) -> dict:
    if preset.endswith(".json"):
        return json.loads((CONFIGS / preset).read_text())
    return copy.deepcopy(preset_config(preset))


def _numeric_paths(config: dict, prefix: tuple = ()) -> list[tuple]:
    out = []
    for key, value in config.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            out.append((*prefix, key))
        elif isinstance(value, dict) and len(prefix) < 2:
            out += _numeric_paths(value, (*prefix, key))
    return out


def config_cases(rng: random.Random, folder: Path) -> list[Case]:
    cases = []
    for i in range(90):
        preset = rng.choice(_FAMILIES)
        config = _config(preset)
        paths = _numeric_paths(config)
        path = rng.choice(paths)
        value = rng.choice(HOSTILE_NUMBERS)
        target = config
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        file = write(folder / f"c{i}" / "config.json", json.dumps(config))
        bad = isinstance(value, float) and value != value or value in (float("inf"), float("-inf"))
        core = path[-1] in _CORE and len(path) == 1 and not isinstance(value, float) or (
            path[-1] in _CORE and isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0)
        expect = "refuse" if bad or core and value not in (None, 0.5, 1.5, 1e-300) else "either"
        command = rng.choice([["estimate", str(file), "--device", DEVICE, "--json"],
                              ["train", str(file), "--device", "h100", "--json"],
                              ["estimate", str(file.parent), "--json"]])
        cases.append(Case(f"{preset}:{'.'.join(path)}={value!r:.20}", "numbers", command, expect=expect,
                          says=None, check=sane_json))
    for i in range(12):  # names the family reads, made hostile
        preset = rng.choice(_FAMILIES)
        config = _config(preset)
        key = rng.choice(["model_type", "hidden_act", "architectures", "torch_dtype", "_name_or_path", "rope_scaling",
                          "layer_types", "quantization_config"])
        config[key] = rng.choice([hostile_name(rng), "x" * 200_000, [hostile_name(rng)], {"type": hostile_name(rng)},
                                  ["full_attention"] * 100_000])
        file = write(folder / f"n{i}" / "config.json", json.dumps(config))
        cases.append(Case(f"{preset}:{key}=hostile", "unknown-names",
                          ["estimate", str(file), "--device", DEVICE, "--json"], check=sane_json))
    big = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
           "intermediate_size": 128, "vocab_size": 100}
    for id, text in {
        "deep-json": "[" * 200_000 + "]" * 200_000, "deep-object": '{"a":' * 50_000 + "1" + "}" * 50_000,
        "many-keys": json.dumps({**big, **{f"k{i}": i for i in range(200_000)}}),
        "4MiB-string": json.dumps({**big, "pad": "x" * (4 * 2**20 + 10)}),
        "layers-1e6": json.dumps({**big, "num_hidden_layers": 10**6}),
        "layers-1e9": json.dumps({**big, "num_hidden_layers": 10**9}),
        "vocab-1e9": json.dumps({**big, "vocab_size": 10**9}),
        "vocab-1e12": json.dumps({**big, "vocab_size": 10**12}),
        "hidden-2e6": json.dumps({**big, "hidden_size": 2**21, "intermediate_size": 2**23}),
        "heads-1e6": json.dumps({**big, "hidden_size": 2**20, "num_attention_heads": 2**20}),
        "duplicate-keys": '{"model_type":"llama","hidden_size":64,"hidden_size":4096,"num_hidden_layers":2,'
                          '"num_attention_heads":4,"intermediate_size":128,"vocab_size":100}',
        "huge-int": '{"model_type":"llama","hidden_size":' + "9" * 10_000 + "}",
        "latin1": '{"model_type":"llama","x":"caf\xe9"}'.encode("latin-1"),
        "top-level-list": "[1, 2]",
    }.items():
        file = write(folder / id / "config.json", text)
        cls = {"duplicate-keys": "duplicates", "deep-json": "nested", "deep-object": "nested", "many-keys": "nested",
               "4MiB-string": "nested"}.get(id, "quadratic")
        refused = ("deep-json", "deep-object", "4MiB-string", "huge-int", "latin1", "top-level-list")
        expect = "refuse" if id in refused else "either"
        cases.append(Case(id, cls, ["estimate", str(file), "--device", DEVICE, "--json"], expect=expect,
                          check=sane_json))
    return cases
