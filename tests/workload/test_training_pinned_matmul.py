"""A framework profile's pinned-software matmul fraction (data/training/frameworks.yaml matmul_fraction):
llm-foundry's mid-2023 image (CUDA 12.0/12.1 cuBLAS) on H100 at the fraction pytorch/pytorch#100850 measured."""

from __future__ import annotations

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import parse_config
from sizeup.workload.frameworks import matmul_fraction, resolve_settings
from sizeup.workload.parallel import ParallelConfig
from sizeup.workload.training import TrainingConfig, estimate_training, with_settings

MPT_7B = {"model_type": "gpt2", "n_embd": 4096, "n_layer": 32, "n_head": 32, "vocab_size": 50368, "n_positions": 2048}
H100_PEAK_TF = 989.4  # NVIDIA H100 SXM datasheet, dense BF16


def test_llm_foundry_h100_fraction_is_the_measured_cublas_12_rate():
    frac = matmul_fraction("llm-foundry", 9.0)
    # pytorch/pytorch#100850, cuBLAS 12.0.2, H100 bf16: 549.5 and 542.9 TF at >= 4096 rows; 742.7 TF at 2048
    assert frac.typical == pytest.approx(549.5 / H100_PEAK_TF, abs=0.01)
    assert frac.high == pytest.approx(742.7 / H100_PEAK_TF, abs=0.01)
    assert frac.low <= 542.9 / H100_PEAK_TF


@pytest.mark.parametrize("framework, cc", [("llm-foundry", 8.0), ("hf", 9.0), (None, 9.0), ("llm-foundry", None)])
def test_no_fraction_where_no_profile_states_one(framework, cc):
    assert matmul_fraction(framework, cc) is None


def _step(device_id: str, framework: str | None, precision: str = "bf16-mixed"):
    arch = parse_config(MPT_7B, name="mpt-7b")
    fw = resolve_settings(framework, 2048, attention="flash2")  # as llm-foundry asks: only the matmul can differ
    cfg = with_settings(TrainingConfig(precision=precision, seq=2048, micro_batch=6, global_batch=48,
                                       parallel=ParallelConfig(gpus=8, nodes=1, zero=3)), fw, framework)
    return estimate_training(arch, load_catalog(include_user=False).device(device_id), cfg)


def test_pinned_fraction_slows_only_the_h100_bf16_weight_products():
    pinned, default = _step("h100-sxm-80gb", "llm-foundry"), _step("h100-sxm-80gb", None)
    # the weight products run at 0.55 instead of 0.72 of the peak: the step is longer, by less than 0.72/0.55
    ratio = pinned.step_s.typical / default.step_s.typical
    assert 1.05 < ratio < 0.72 / 0.55
    assert any("matmul_fraction" in n for n in pinned.assumptions)
    # A100 has no pinned figure: llm-foundry's profile leaves its step as the GPU default prices it
    a100, a100_default = _step("a100-sxm-80gb", "llm-foundry"), _step("a100-sxm-80gb", None)
    assert not any("matmul_fraction" in n for n in a100.assumptions)
    assert a100.step_s.typical == pytest.approx(a100_default.step_s.typical, rel=1e-9)
