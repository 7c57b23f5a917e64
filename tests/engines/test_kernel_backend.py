"""llama.cpp's build backend (issue 18): `select_kernel(..., backend=)` filters kernels.yaml's entries by backend;
None keeps the device's default backend (the kernels priced before the option existed)."""

import pytest

from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.engines.kernels import check_backend, default_backend, select_kernel

CAT = load_catalog(include_user=False)


@pytest.mark.parametrize("device, native", [("rtx-3090", "cuda"), ("rx-7900-xtx", "hip"), ("arc-b580", "sycl"),
                                            ("m2-ultra", "metal")])
def test_default_backend_per_vendor(device, native):
    assert default_backend(CAT.device(device)) == native


@pytest.mark.parametrize("device, quant, tokens", [
    ("rtx-3090", "q4_0", 512), ("rtx-4090", "f16", 512), ("rx-7900-xtx", "q4_k_m", 512), ("rx-7900-xtx", "q6_k", 512),
    ("arc-b580", "q4_k_m", 512), ("rtx-3090", "q4_k_m", 1), ("m2-ultra", "q4_0", 512)])
def test_the_default_backend_selects_what_none_selects(device, quant, tokens):
    dev = CAT.device(device)
    for decode in (False, True):
        a = select_kernel("llama.cpp", quant, dev, decode, tokens)
        b = select_kernel("llama.cpp", quant, dev, decode, tokens, backend=default_backend(dev))
        assert a == b
        assert a is None or not a.name.startswith("vulkan")


@pytest.mark.parametrize("device, kernel", [("rtx-3090", "vulkan-coopmat2"), ("rtx-4090", "vulkan-coopmat2"),
                                            ("rx-9070-xt", "vulkan-coopmat"), ("rx-7900-xtx", "vulkan-coopmat"),
                                            ("arc-b580", "vulkan-coopmat"), ("arc-a770-16gb", "vulkan-scalar")])
def test_vulkan_prefill_kernel_follows_the_matrix_path_of_the_device(device, kernel):
    """ggml-vulkan.cpp: coopmat2 on NVIDIA, KHR coopmat on RDNA3/4 and Xe2, the scalar shader on Alchemist."""
    k = select_kernel("llama.cpp", "q4_k_m", CAT.device(device), False, 512, backend="vulkan")
    assert k.name == kernel and k.fraction is not None and 0 < k.fraction.typical <= 1


def test_vulkan_entries_never_reach_the_default_backend_and_decode_keeps_the_default():
    dev = CAT.device("rx-7900-xtx")
    assert select_kernel("llama.cpp", "q4_k_m", dev, False, 512).name == "hip-mmq-wmma"
    # batch <= 8 columns: mul_mat_vec, no Vulkan entry -> the device default
    assert select_kernel("llama.cpp", "q4_k_m", dev, True, 1, backend="vulkan") is None
    # CUDA entries do not apply to a Vulkan build on NVIDIA either
    assert select_kernel("llama.cpp", "q4_k_m", CAT.device("rtx-3090"), True, 1, backend="vulkan") is None


@pytest.mark.parametrize("backend, device, message", [
    ("metal", "rtx-3090", "--backend metal: rtx-3090 (nvidia gpu) runs llama.cpp with cuda or vulkan"),
    ("cuda", "rx-7900-xtx", "--backend cuda: rx-7900-xtx (amd gpu) runs llama.cpp with hip or vulkan"),
    ("hip", "arc-b580", "runs llama.cpp with sycl or vulkan"),
    ("vulkan", "m2-ultra", "runs llama.cpp with metal"),
    ("cpu", "rtx-3090", "--gpu-layers 0 --cpu NAME"),
    ("opencl", "rtx-3090", "expected one of cuda, hip, sycl, metal, vulkan, cpu"),
])
def test_a_backend_the_device_cannot_run_is_refused(backend, device, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_backend(backend, CAT.device(device))


def test_accepted_backends():
    for backend, device in (("vulkan", "rtx-3090"), ("cuda", "rtx-3090"), ("vulkan", "arc-a770-16gb"),
                            ("hip", "rx-7900-xtx"), ("metal", "m2-ultra"), (None, "rtx-3090")):
        check_backend(backend, CAT.device(device))
