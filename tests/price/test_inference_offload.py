"""llama.cpp partial and CPU-only offload priced on the host CPU."""

import pytest

from sizeup.api import estimate
from sizeup.errors import ConfigError


def _decode(**kw):
    return estimate("llama-3-8b", engine="llama.cpp", quant="q4_k_m", **kw).decode


def test_cpu_only_is_slower_than_the_gpu_and_known_with_a_cpu():
    gpu = _decode(device="rtx-4090")
    cpu = _decode(device="rtx-4090", gpu_layers=0, cpu="xeon-8480-2s")
    half = _decode(device="rtx-4090", gpu_layers=16, cpu="xeon-8480-2s")
    assert cpu.compute_priced and half.compute_priced
    assert gpu.latency_s.typical < half.latency_s.typical < cpu.latency_s.typical


def test_layers_on_an_unknown_cpu_have_no_speed():
    d = _decode(device="rtx-4090", gpu_layers=0)
    assert d.tokens_per_s is None


def test_fewer_threads_are_not_faster():
    many = _decode(device="xeon-8480-2s")
    few = _decode(device="xeon-8480-2s", threads=8)
    assert few.latency_s.typical >= many.latency_s.typical


def test_cpu_flag_must_name_a_cpu():
    with pytest.raises(ConfigError, match="expected a cpu device"):
        _decode(device="rtx-4090", gpu_layers=0, cpu="apple-m3-max")


def _soc_with_cpu_cluster(folder):
    """A synthetic SoC whose CPU cluster is its own cpu entry (host_cpu): 12 cores, a smaller share of the
    unified memory bandwidth than the GPU (a stand-in architecture gives the CPU its compute peak)."""
    common = ["vendor: apple", "memory_gib: 64", "memory_type: LPDDR5", "source: test", "retrieved: 2026-12-03"]
    (folder / "zz-soc.yaml").write_text("\n".join(["id: zz-soc", "name: Zed SoC", "kind: soc",
                                                   "memory_bandwidth_gb_per_s: 400", "architecture: apple-m3",
                                                   "compute_units: 40", "host_cpu: zz-soc-cpu", *common]) + "\n")
    (folder / "zz-soc-cpu.yaml").write_text("\n".join(["id: zz-soc-cpu", "name: Zed SoC CPU cluster", "kind: cpu",
                                                       "memory_bandwidth_gb_per_s: 200", "architecture: neoverse-v2",
                                                       "compute_units: 12", "boost_clock_mhz: 4000", *common]) + "\n")


def test_soc_cpu_only_runs_on_its_host_cpu(tmp_path):
    _soc_with_cpu_cluster(tmp_path)
    gpu = estimate("llama-3-8b", device="zz-soc", engine="llama.cpp", quant="q4_k_m", catalog=[tmp_path])
    cpu = estimate("llama-3-8b", device="zz-soc", engine="llama.cpp", quant="q4_k_m", gpu_layers=0,
                   catalog=[tmp_path])
    assert cpu.cpu_device is not None and cpu.cpu_device.id == "zz-soc-cpu"
    assert cpu.to_dict()["cpu_device"]["id"] == "zz-soc-cpu"
    # decode is memory-bound: the CPU cluster's 200 GB/s against the GPU's 400 GB/s
    assert cpu.decode.latency_s.typical > 1.5 * gpu.decode.latency_s.typical
    assert cpu.prefill.latency_s.typical > gpu.prefill.latency_s.typical


def test_host_cpu_must_name_a_cpu(tmp_path):
    from sizeup.errors import CatalogError
    from sizeup.hardware.catalog import load_catalog

    _soc_with_cpu_cluster(tmp_path)
    text = (tmp_path / "zz-soc.yaml").read_text().replace("host_cpu: zz-soc-cpu", "host_cpu: rtx-4090")
    (tmp_path / "zz-soc.yaml").write_text(text)
    with pytest.raises(CatalogError, match="host_cpu"):
        load_catalog([tmp_path], include_user=False)
