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
