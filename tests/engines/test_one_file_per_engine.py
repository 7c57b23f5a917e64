"""Adding an engine touches no pricing module: price/, workload/ and plan/ name no engine and import no engine's
file (they ask the execution model, engines/base.py), and an engine written in one file (tests/engines/toy_engine.py)
registers and is estimated through `sizeup.api.estimate` with its own kernels, host time, memory and batching."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from sizeup.engines import base
from sizeup.errors import ConfigError

PACKAGE = Path(base.__file__).resolve().parents[1]
PRICING = ("price", "workload", "plan")
NOT_PRICING: dict[str, str] = {}
"""Modules of price/, workload/ and plan/ allowed to name an engine: none (a plan's server line is the engine's own
`ExecutionModel.launch`, engines/launch.py)."""


def _engine_names() -> set[str]:
    return set(base._declared())  # every name and alias an engine file's decorator line declares


def _modules():
    for layer in PRICING:
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            if str(path.relative_to(PACKAGE)) not in NOT_PRICING:
                yield path, ast.parse(path.read_text(encoding="utf-8"))


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for stmt in body:  # module, class and function docstrings, and attribute docstrings after assignments
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                out.add(id(stmt.value))
    return out


def test_the_scan_knows_every_engine():
    assert {"hf", "vllm", "llama.cpp", "tensorrt-llm", "tensorrt"} <= _engine_names()


def test_no_engine_is_named_in_price_workload_or_plan():
    """A string that is an engine's name (or NAME@RELEASE) is a branch on the engine; prose in messages and
    docstrings may mention one. Defaults come from data/engines/defaults.yaml."""
    names = "|".join(re.escape(n) for n in sorted(_engine_names()))
    named = re.compile(rf"^({names})(@\S*)?$", re.I)
    found = []
    for path, tree in _modules():
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                if named.match(node.value.strip()):
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.value!r}")
    assert not found, "engine names in the pricing layers: " + ", ".join(found)


def test_price_workload_and_plan_import_no_engine_file():
    """They import the shared modules of engines/ (base, profile, kernels, runtimes, reserve, defaults), never an
    engine's own file: the registry finds it."""
    engine_files = {module for _, module in base._declared().values()}
    found = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            targets = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names] \
                if isinstance(node, ast.ImportFrom) else []
            for target in targets:
                parts = target.split(".")
                if parts[:2] == ["sizeup", "engines"] and len(parts) > 2 and parts[2] in engine_files:
                    found.append(f"{path.relative_to(PACKAGE)}: {target}")
    assert not found, "engine files imported by the pricing layers: " + ", ".join(found)


@pytest.fixture(scope="module")
def toy():
    from tests.engines import toy_engine  # registers "toy-engine" from its one file

    return toy_engine


def test_a_new_engine_in_one_file_is_estimated_through_the_api(toy):
    from sizeup.api import estimate
    from sizeup.cli.commands.estimate import render_estimate
    from sizeup.price.execution import phase_efficiency
    from sizeup.workload.quantize import get_format

    e = estimate("llama-3.1-8b", device="h100-sxm-80gb", engine="toy-engine", quant="bf16")
    data = e.to_dict()
    assert (data["config"]["engine"], data["config"]["engine_version"]) == ("toy-engine", "2.0")
    assert data["execution"]["batching"]["chunked_prefill"] and data["execution"]["batching"]["max_sequences"] == 64
    assert "toy-engine 2.0 (current release)" in render_estimate(e)
    # its memory reserve: what the request allocates, no allocator reserve, and its own 1 GiB
    assert e.memory.overhead_bytes == toy.RESERVE_BYTES and "toy engine: 1 GiB held" in e.memory.notes
    # its kernel: matmuls at half the fp16 peak, named with the file it was read from
    assert any("toy-gemm kernel (toy_engine.py)" in a for a in e.assumptions)
    eff = phase_efficiency(e.execution, False, get_format("bf16"), 512)
    assert eff.tensor["matmul"].typical == pytest.approx(0.5)



def test_its_step_overhead_reaches_each_step(toy, monkeypatch):
    """1 ms of host time per step (the toy's step_overhead_s): 3 ms instead adds 2 ms to a decode step and to
    the prefill, nothing else."""
    from dataclasses import replace

    from sizeup.api import estimate
    from sizeup.ranges import Range

    one = estimate("llama-3.1-8b", device="h100-sxm-80gb", engine="toy-engine", quant="bf16")
    monkeypatch.setattr(toy, "PROFILE", replace(toy.PROFILE, ranges={"step_overhead_s": Range(3e-3, 3e-3, 3e-3)}))
    three = estimate("llama-3.1-8b", device="h100-sxm-80gb", engine="toy-engine", quant="bf16")
    for phase in ("decode", "prefill"):
        assert getattr(three, phase).latency_s.typical == pytest.approx(getattr(one, phase).latency_s.typical + 2e-3)


def test_its_releases_and_aliases_are_its_own(toy):
    from sizeup.api import estimate

    assert estimate("llama-3.1-8b", device="h100", engine="toy@1.5", quant="bf16").execution.version == "1.5"
    with pytest.raises(ConfigError, match=r"toy-engine@3\.0: sizeup's data describes toy-engine releases 1\.0 \.\. 2\.0"):
        estimate("llama-3.1-8b", device="h100", engine="toy-engine@3.0", quant="bf16")
    # without a quant the engine's own formats are tried, most precise first
    assert estimate("llama-3.1-8b", device="h100", engine="toy-engine").weights.id == "bf16"


def test_a_name_registered_twice_is_refused(toy):
    with pytest.raises(ValueError, match="already registered"):
        base.engine("toy-engine")(type("Again", (base.ExecutionModel,), {}))
