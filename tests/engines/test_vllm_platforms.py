"""vLLM's platforms (engines/vllm.py PLATFORMS): `--backend` names only the one vLLM runs a device on; no graph on
Intel XPU by default or under --enforce-eager, so every kernel pays the device kind's eager launch time
(data/efficiency/gpu.yaml overhead_s) and no graph memory is held."""

import pytest

from sizeup import api
from sizeup.engines import resolve
from sizeup.engines.base import engine_settings
from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.price.efficiency import device_efficiency

CATALOG = load_catalog(include_user=False)


@pytest.mark.parametrize("device, backend", [("h100", "cuda"), ("mi300x", "hip"), ("arc-pro-b60", "sycl")])
def test_the_backend_may_name_the_platform_vllm_runs_the_device_on(device, backend):
    assert resolve("vllm", CATALOG.device(device), backend=backend).NAME == "vllm"


@pytest.mark.parametrize("device, backend, expected", [("h100", "vulkan", "--backend cuda"),
                                                      ("arc-pro-b60", "cuda", "--backend sycl")])
def test_another_backend_is_a_one_line_error(device, backend, expected):
    with pytest.raises(ConfigError, match=expected):
        resolve("vllm", CATALOG.device(device), backend=backend)


def test_graphs_on_cuda_none_on_intel_or_under_enforce_eager():
    h100, arc = CATALOG.device("h100"), CATALOG.device("arc-pro-b60")
    assert resolve("vllm", h100).graphs and not resolve("vllm", arc).graphs
    eager = resolve("vllm", h100, settings=engine_settings("vllm", ("enforce-eager",)))
    assert not eager.graphs
    assert eager.per_op_overhead(True) is None  # the device kind's eager launch time
    graph = resolve("vllm", h100).per_op_overhead(True)
    assert graph.typical < device_efficiency(h100).overhead_s.typical


def test_enforce_eager_costs_decode_time_and_frees_graph_memory():
    base = dict(device="h100", engine="vllm", quant="bf16", prompt=512, output=128)
    graph = api.estimate("llama-3.1-8b", api.EstimateOptions(**base))
    eager = api.estimate("llama-3.1-8b", api.EstimateOptions(**base, engine_options=("enforce-eager",)))
    assert eager.decode.latency_s.typical > graph.decode.latency_s.typical
    assert eager.memory.overhead_bytes < graph.memory.overhead_bytes
    assert any("--enforce-eager" in a for a in eager.assumptions)


def test_block_size_sets_the_kv_block():
    model = resolve("vllm", CATALOG.device("h100"), settings=engine_settings("vllm", ("block-size=64",)))
    assert model.profile.value("kv_block_tokens", 16) == 64


def test_the_cli_takes_vllms_own_platform_names(capsys):
    from sizeup.cli.main import main

    assert main(["estimate", "llama-3.2-1b", "--device", "arc-pro-b60", "--engine", "vllm", "--backend", "xpu",
                 "--engine-opt", "no-enable-prefix-caching", "--json"]) == 0
    assert '"backend": "sycl"' in capsys.readouterr().out
