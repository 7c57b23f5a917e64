"""F16 batch-1 decode by llama.cpp version (kernels.yaml `cuda-dmmv-f16`): DMMV before PR #9816 (2024-10-10, vector
loads) and PR #10318 (2024-11-17, MMVF), its bandwidth bound by the loads an SM issues per clock."""

import pytest

from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.engines.kernels import select_kernel
from sizeup.workload.inference import InferenceConfig

MAY_2024 = "2024-05-15"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(include_user=False)


def test_old_builds_run_dmmv_for_f16_only_and_current_builds_mmvf(catalog):
    a100 = catalog.device("a100-sxm-80gb")
    assert select_kernel("llama.cpp", "f16", a100, True, 1, build_date=MAY_2024).name == "cuda-dmmv-f16"
    assert select_kernel("llama.cpp", "f16", a100, True, 1).name == "mmvq"
    assert select_kernel("llama.cpp", "f16", a100, True, 1, build_date="2024-10-10").name == "mmvq"  # PR #9816
    assert select_kernel("llama.cpp", "q4_k_m", a100, True, 1, build_date=MAY_2024).name == "mmvq"


def test_dmmv_bandwidth_is_sms_x_clock_x_bytes_per_sm_clock(catalog):
    """A100: 108 SMs x 1.41 GHz (19.5 TFLOPS fp32 / 2 / 64 lanes) x 6.5 B = 0.49 of 2039 GB/s, below the hbm class."""
    a100 = catalog.device("a100-sxm-80gb")
    old = select_kernel("llama.cpp", "f16", a100, True, 1, build_date=MAY_2024)
    assert old.memory.typical == pytest.approx(19.5e12 / 2 / 64 * 6.5 / 2039e9, rel=1e-3)
    assert old.memory.typical < select_kernel("llama.cpp", "f16", a100, True, 1).memory.typical


def test_pr_9816_speedups_follow_from_the_cap(catalog):
    """Not fit on PR #9816: vectorized loads lift the cap; the gain is class / cap where the cap binds: about 1.3x on
    the H100 SXM (measured 1.27x), none on a GDDR card (measured 1.01x)."""
    def gain(device_id):
        d = catalog.device(device_id)
        return (select_kernel("llama.cpp", "f16", d, True, 1).memory.typical
                / select_kernel("llama.cpp", "f16", d, True, 1, build_date=MAY_2024).memory.typical)

    assert 1.2 < gain("h100-sxm-80gb") < 1.45
    assert gain("rtx-3090") == pytest.approx(1.0)
    assert gain("rtx-4090") == pytest.approx(1.0)


def test_build_date_is_a_llama_cpp_date():
    InferenceConfig(engine="llama.cpp", build_date=MAY_2024)
    with pytest.raises(ConfigError, match="YYYY-MM-DD"):
        InferenceConfig(engine="llama.cpp", build_date="May 2024")
    with pytest.raises(ConfigError, match="llama.cpp"):
        InferenceConfig(engine="vllm", build_date=MAY_2024)
