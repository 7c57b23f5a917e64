"""Engine releases (`--engine vllm@0.10`): each engine's data names the releases it describes and its current one
(data/engines/NAME.yaml `versions`), a setting that changed between releases is a list of entries with the releases
each was read for, and every estimate names the engine and release it describes."""

from __future__ import annotations

import json

import pytest

from sizeup.cli.main import main
from sizeup.engines import parse_engine, resolve
from sizeup.engines.profile import engine_profile, in_releases, release_key
from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model
from sizeup.price.memory import MemoryConfig, inference_memory
from sizeup.workload.quantize import get_format

CATALOG = load_catalog(include_user=False)
H100 = CATALOG.device("h100-sxm-80gb")


def test_releases_compare_component_by_component():
    assert release_key("0.10.1") == (0, 10, 1) and release_key("2024-10-10") == (2024, 10, 10)
    assert release_key("0.10") > release_key("0.9")
    assert in_releases(release_key("0.8.5"), (0, 6), (0, 8))  # a series covers its patch releases
    assert not in_releases(release_key("0.9"), (0, 6), (0, 8)) and in_releases((0, 34), (0, 34), None)
    with pytest.raises(ValueError):
        release_key("b4500")


@pytest.mark.parametrize("text, name, version", [
    ("vllm", "vllm", None), ("vllm@0.10", "vllm", "0.10"), ("LLAMACPP", "llama.cpp", None),
    ("trtllm@1.2", "tensorrt-llm", "1.2"), ("llama.cpp@2024-06-01", "llama.cpp", "2024-06-01"),
])
def test_engine_at_release_is_parsed_with_aliases(text, name, version):
    ref = parse_engine(text)
    assert (ref.name, ref.version) == (name, version)


@pytest.mark.parametrize("text, message", [
    ("vllm@0.1", "--engine vllm@0.1: sizeup's data describes vllm releases 0.2 .. 0.34 (default 0.34)"),
    ("vllm@", "--engine 'vllm@': expected NAME@RELEASE, e.g. vllm@0.34"),
    ("llama.cpp@b4500", "a llama.cpp release is the date of its build, YYYY-MM-DD"),
    ("tensorrt-llm@0.4", "describes tensorrt-llm releases 0.5 .. 1.2 (default 1.2)"),
    ("sgl", "unknown engine 'sgl': expected one of"),
])
def test_an_unknown_engine_or_release_is_a_one_line_error(text, message):
    with pytest.raises(ConfigError) as e:
        parse_engine(text)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_every_engine_file_names_its_current_release_and_its_source():
    for name in ("hf", "vllm", "llama.cpp", "tensorrt-llm", "tensorrt", "sglang"):
        versions = engine_profile(name).versions
        assert versions is not None and versions.default and "read" in versions.source
        assert engine_profile(name).version == versions.default
        assert resolve(name, H100).version == versions.default


def test_vllm_gpu_memory_utilization_by_release():
    # 0.9 read from the v0.6.4 and v0.8.1 docs, 0.92 from the current release: the releases between take the
    # earlier value and the estimate says so
    assert engine_profile("vllm").value("gpu_memory_utilization", 0) == 0.92
    assert engine_profile("vllm", "0.8").value("gpu_memory_utilization", 0) == 0.9
    assert engine_profile("vllm", "0.8").notes == ()
    between = engine_profile("vllm", "0.10")
    assert between.value("gpu_memory_utilization", 0) == 0.9
    assert len(between.notes) == 1 and "gpu_memory_utilization read for 0.2-0.8" in between.notes[0]


def test_vllm_v0_releases_run_the_v0_engine():
    """Before 0.8: the V0 engine's host time per step (issue #6913: 3.4 ms at batch 32 vs V1's 0.62 ms), 256
    sequences (so a profiling-run sampler over 256 rows, V0's profile_run sampled its dummy sequences too), CUDA
    graphs captured outside the budget (before 0.21)."""
    v0, v1 = resolve("vllm@0.6", H100), resolve("vllm", H100)
    llama = load_model("llama-3.1-8b")
    assert v0.step_overhead(llama, decode=True).typical == pytest.approx(3.4e-3)
    assert v1.step_overhead(llama, decode=True).typical == pytest.approx(6.2e-4)
    assert (v0.batching.max_sequences, v0.batching.chunked_prefill) == (256, False)
    assert (v1.batching.max_sequences, v1.batching.chunked_prefill) == (1024, True)
    cfg = MemoryConfig(batch=1, context=1024, prompt=512, weights=get_format("bf16"))
    m0, m1 = inference_memory(llama, v0, cfg), inference_memory(llama, v1, cfg)
    assert m0.activations_bytes < m1.activations_bytes  # the sampler over 256 rows, not V1's 1,024
    assert any("V0 profiling run" in n and "256 rows" in n for n in m0.notes)
    assert any("outside that budget" in n for n in m0.notes) and not any("outside" in n for n in m1.notes)
    # the pool: 0.9 of the card less the weights, the forward and non-torch memory (the graphs come after it)
    from sizeup.engines.reserve import device_total_bytes

    non_torch = engine_profile("vllm").range("non_torch_bytes").typical
    assert m0.kv_cache_bytes == int(device_total_bytes(H100) * 0.9 - m0.weights_bytes - m0.activations_bytes
                                    - non_torch)


def test_cuda_graph_memory_joins_the_budget_from_0_21():
    llama, cfg = load_model("llama-3.1-8b"), MemoryConfig(batch=1, context=1024, prompt=512, weights=get_format("bf16"))
    before, after = (inference_memory(llama, resolve(f"vllm@{v}", H100), cfg) for v in ("0.20", "0.21"))
    graphs = engine_profile("vllm").range("cuda_graph_bytes").typical
    assert before.kv_cache_bytes - after.kv_cache_bytes == pytest.approx(graphs, abs=2)


def test_transformers_releases_before_5_24_pay_the_mamba_1_syncs():
    ssm = load_model("tests/ingest/configs/mamba-130m-hf.json")
    gpu = CATALOG.device("rtx-2080-ti")
    old, current = resolve("hf@4.44", gpu), resolve("hf", gpu)
    assert old.profile.value("ssm_host_syncs.v1", -1) == 2 and current.profile.value("ssm_host_syncs.v1", -1) == 0
    assert old.step_overhead(ssm, decode=True).typical > current.step_overhead(ssm, decode=True).typical
    assert any("forces 2 host-device syncs" in n for n in old.phase_notes(ssm, decode=True))
    assert not any("syncs" in n for n in current.phase_notes(ssm, decode=True))


def test_a_llama_cpp_release_is_its_build_date():
    a100 = CATALOG.device("a100-80gb")
    dated, flag = resolve("llama.cpp@2024-05-10", a100), resolve("llama.cpp", a100, build_date="2024-05-10")
    assert dated.build_date == flag.build_date == "2024-05-10"
    assert dated.matrix_kernel("f16", True, 1).name == flag.matrix_kernel("f16", True, 1).name == "cuda-dmmv-f16"
    assert resolve("llama.cpp", a100).matrix_kernel("f16", True, 1).name != "cuda-dmmv-f16"
    with pytest.raises(ConfigError, match="name the build once"):
        resolve("llama.cpp@2024-05-10", a100, build_date="2024-06-01")


def test_every_estimate_names_its_engine_and_release(capsys):
    assert main(["estimate", "llama-3.1-8b", "--device", "h100", "--engine", "vllm@0.10", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["config"]["engine"], data["config"]["engine_version"]) == ("vllm", "0.10")
    assert data["execution"]["name"] == "vllm" and data["execution"]["default_version"] == "0.34"
    assert any("vllm 0.10: taken from the nearest release read" in a for a in data["assumptions"])
    assert main(["estimate", "llama-3.1-8b", "--device", "h100", "--engine", "vllm"]) == 0
    assert "vllm 0.34 (current release)" in capsys.readouterr().out.splitlines()[0]
    assert main(["estimate", "llama-3.1-8b", "--devices", "common", "--engine", "vllm", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["devices"]
    assert {r["engine_version"] for r in rows if r["fits"]} == {"0.34"}


def test_a_scenario_names_an_engine_at_a_release_or_is_refused():
    from sizeup.plan.offers import check_constraints
    from sizeup.plan.scenario import parse_scenario

    base = {"name": "s", "model": "llama-3.1-8b", "task": "chat", "traffic": {"users": 10, "prompt_tokens": 500,
                                                                           "output_tokens": 100}}
    s = parse_scenario({**base, "constraints": {"engines": ["vllm@0.10"]}}, source="test")
    assert s.constraints.engines == ("vllm@0.10",)
    check_constraints(s, CATALOG)
    bad = parse_scenario({**base, "constraints": {"engines": ["vllm@0.1"]}}, source="test")
    with pytest.raises(ConfigError, match=r"scenario key 'constraints.engines' = 'vllm@0.1': --engine vllm@0.1: ") as e:
        check_constraints(bad, CATALOG)
    assert "\n" not in str(e.value)


def test_a_release_series_means_its_newest_patch_that_the_data_names():
    # vllm@0.7: the latent MLA cache came with 0.7.1 (data/engines/vllm.yaml mla_latent_cache), the newest 0.7 patch
    # the data names; an exact patch stays exact
    series = engine_profile("vllm", "0.7")
    assert series.version == "0.7.1" and series.value("mla_latent_cache", -1) == 1
    assert any("vllm@0.7: a release series, taken as 0.7.1" in n for n in series.notes)
    exact = engine_profile("vllm", "0.7.0")
    assert exact.version == "0.7.0" and exact.value("mla_latent_cache", -1) == 0
    assert not any("release series" in n for n in exact.notes)
    assert resolve("vllm@0.7", H100).label == "vllm 0.7.1"
    assert engine_profile("vllm", "0.11").version == "0.11"  # no patch of 0.11 named: the series as given


def test_the_estimate_says_which_patch_a_series_was_taken_as(capsys):
    main(["estimate", "llama-3-8b", "--device", "h100-sxm-80gb", "--engine", "vllm@0.7"])
    out = capsys.readouterr().out
    assert "vllm 0.7.1" in out.splitlines()[0]
    assert "taken as 0.7.1, the newest 0.7 patch release" in out
