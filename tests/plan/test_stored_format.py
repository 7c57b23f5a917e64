"""A plan of a .gguf file prices the weights in the format the file stores (`general.file_type`), as `estimate`
does, unless the scenario names `constraints.quantizations`; the headline says which and why (issue 27: a Q4_K_M
file was planned in bf16, fp8 and AWQ)."""

from __future__ import annotations

import pytest

from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.plan.headline import build_headline
from sizeup.plan.recommend import plan_scenario
from sizeup.plan.scenario import parse_scenario
from tests.ingest.model_files import U32, llama_gguf

CATALOG = load_catalog(include_user=False)
Q4_K_M, Q5_1 = 15, 9  # llama.cpp's llama_ftype MOSTLY_Q4_K_M, MOSTLY_Q5_1 (llama.h)


def _gguf(tmp_path, file_type: int):
    path = tmp_path / "model.gguf"
    path.write_bytes(llama_gguf({"llama.embedding_length": (U32, 2048), "llama.block_count": (U32, 16),
                                 "llama.feed_forward_length": (U32, 8192), "llama.attention.head_count": (U32, 32),
                                 "llama.attention.head_count_kv": (U32, 8), "general.file_type": (U32, file_type)},
                                tensors=[("token_embd.weight", (2048, 96), 12)]))
    return str(path)


def _scenario(model: str, task: str = "chat", **constraints) -> dict:
    traffic = {"chat": {"users": 20}, "batch": None}[task]
    data = {"name": "g", "model": model, "task": task, "constraints": {"devices": ["l4"], **constraints}}
    return {**data, "traffic": traffic} if traffic else {**data, "job": {"tokens": 1_000_000}}


@pytest.mark.parametrize("task", ["chat", "batch"])
def test_the_file_format_is_priced_and_said(tmp_path, task):
    result = plan_scenario(parse_scenario(_scenario(_gguf(tmp_path, Q4_K_M), task)), CATALOG)
    assert result.chosen is not None
    assert {c.quant for c in result.ranked} == {"q4_k_m"}
    assert result.weights_note.startswith("weights q4_k_m: the format the file stores (GGUF general.file_type = 15")
    assert result.weights_note in build_headline(result).assumptions


def test_named_quantizations_override_the_file_and_say_so(tmp_path):
    result = plan_scenario(parse_scenario(_scenario(_gguf(tmp_path, Q4_K_M), quantizations=["fp8"])), CATALOG)
    assert {c.quant for c in result.ranked} == {"fp8"}
    assert "priced as fp8 (constraints.quantizations), not as the q4_k_m the file stores" in result.weights_note
    same = plan_scenario(parse_scenario(_scenario(_gguf(tmp_path, Q4_K_M), quantizations=["q4_k_m", "fp8"])), CATALOG)
    assert same.weights_note == ""


def test_a_file_format_sizeup_does_not_price_asks_for_one(tmp_path):
    with pytest.raises(ConfigError, match=r"MOSTLY_Q5_1\), a weight format sizeup does not price: expected "
                                          r"constraints.quantizations"):
        plan_scenario(parse_scenario(_scenario(_gguf(tmp_path, Q5_1))), CATALOG)
    priced = plan_scenario(parse_scenario(_scenario(_gguf(tmp_path, Q5_1), quantizations=["q8_0"])), CATALOG)
    assert {c.quant for c in priced.ranked} == {"q8_0"}


def test_a_config_json_model_keeps_the_default_ladder():
    result = plan_scenario(parse_scenario(_scenario("llama-3.2-1b")), CATALOG)
    assert result.weights_note == "" and {c.quant for c in result.ranked} >= {"bf16"}
