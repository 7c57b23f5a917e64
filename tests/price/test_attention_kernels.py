"""Which attention kernel runs (sizeup.price.attention_kernels, data/training/attention_kernels.yaml).

Rules: FlashAttention-2 needs compute capability 8.0+ and fp16/bf16 (Dao-AILab/flash-attention README);
SDPA's memory-efficient kernel runs from sm50 in fp32/fp16, bf16 from sm80 (PyTorch sdp_utils.cpp)."""

import pytest

from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.price.attention_kernels import attention_path, compute_capability


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(include_user=False)


@pytest.mark.parametrize("device, dtype, implementation, kernel", [
    ("v100-sxm2-16gb", "fp32", "sdpa", "mem_efficient"),
    ("v100-sxm2-16gb", "fp16", "sdpa", "mem_efficient"),  # no flash before Ampere
    ("t4", "bf16", "sdpa", "math"),  # mem-efficient bf16 needs sm80
    ("t4", "fp16", "sdpa", "mem_efficient"),
    ("a100-sxm-80gb", "bf16", "sdpa", "flash"),
    ("a100-sxm-80gb", "fp32", "sdpa", "mem_efficient"),  # no flash in fp32
    ("h100-sxm-80gb", "fp8", "flash2", "flash"),
    ("h100-sxm-80gb", "bf16", "eager", "math"),
])
def test_kernel_follows_device_and_dtype(catalog, device, dtype, implementation, kernel):
    path = attention_path(catalog.device(device), dtype, implementation)
    assert path.kernel == kernel
    assert path.fused == (kernel != "math")
    assert path.note.startswith("attention:")


def test_compute_capabilities_from_the_table(catalog):
    assert compute_capability(catalog.device("v100-sxm2-16gb")) == 7.0
    assert compute_capability(catalog.device("t4")) == 7.5
    assert compute_capability(catalog.device("h100-sxm-80gb")) == 9.0
    assert compute_capability(catalog.device("mi300x")) is None


def test_every_nvidia_gpu_in_the_catalog_has_a_compute_capability(catalog):
    nvidia = [d for d in catalog.devices.values() if d.vendor == "nvidia"]
    assert len(nvidia) > 50
    assert [d.id for d in nvidia if compute_capability(d) is None] == []


@pytest.mark.parametrize("device, dtype", [("v100-sxm2-16gb", "fp16"), ("a100-sxm-80gb", "fp32"), ("t4", "bf16")])
def test_flash2_refused_where_it_does_not_run(catalog, device, dtype):
    with pytest.raises(ConfigError, match="FlashAttention-2 needs compute capability 8.0"):
        attention_path(catalog.device(device), dtype, "flash2")


def test_unknown_implementation_is_one_line_error(catalog):
    with pytest.raises(ConfigError, match="--attention 'xformers': expected one of sdpa, eager, flash2"):
        attention_path(catalog.device("a100-sxm-80gb"), "bf16", "xformers")
