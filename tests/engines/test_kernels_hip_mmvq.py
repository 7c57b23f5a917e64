"""HIP MMVQ at decode (kernels.yaml `hip-mmvq`): ggml-hip compiles ggml-cuda's mmvq.cu and vecdotq.cuh, so AMD RDNA3/4
decode runs the same vec_dot per weight block and per column; RDNA's one VALU runs its integer and fp32 work alike,
so the ops per weight are the CUDA integer count plus the vec_dot's fp32 conversions and FMAs."""

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.engines.kernels import int32_rate, kernel_peak, select_kernel


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(include_user=False)


def test_rdna3_quantized_decode_runs_hip_mmvq_on_the_single_issue_valu(catalog):
    xtx = catalog.device("rx-7900-xtx")
    k = select_kernel("llama.cpp", "q2_k", xtx, True, 8)
    assert k.name == "hip-mmvq" and k.peak == "int32" and k.memory is None  # bytes at the device default
    assert k.fraction.typical == pytest.approx(2 / 4.45)  # CUDA int 2.9 + fp32 1.55 per weight
    # the catalog's 61.39 TFLOPS counts VOPD dual issue: single-issue ops run at a quarter of it per op
    assert int32_rate(xtx) == pytest.approx(61.39e12 / 4, rel=1e-3)
    assert kernel_peak(xtx, k) == int32_rate(xtx)
    assert select_kernel("llama.cpp", "f16", xtx, True, 1) is None  # no dequantization for F16
    wide = select_kernel("llama.cpp", "q2_k", xtx, True, 16)  # above MMVQ_MAX_BATCH_SIZE (8 columns): not MMVQ
    assert wide is None or wide.name != "hip-mmvq"


def test_hip_mmvq_stays_off_cdna_and_other_backends(catalog):
    assert select_kernel("llama.cpp", "q4_0", catalog.device("mi300x"), True, 1) is None  # cdna3: no count here
    vk = select_kernel("llama.cpp", "q2_k", catalog.device("rx-7900-xtx"), True, 1, backend="vulkan")
    assert vk is None or vk.name != "hip-mmvq"


def test_rx_7900_xtx_q2k_microbatch_rows_follow_the_valu_term():
    """CHECK rows (inference_measurements_kquant_decode.yaml, PR #26705, not fit): per-column t/s falls 144 -> 47 from
    1 to 8 columns; without the VALU term every batch priced at the 1-column speed (+184% at 8 columns)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from validation import rows as validation_rows, runner

    rows = [r for r in validation_rows.load(validation_rows.files_named("inference_measurements_kquant_decode.yaml"))
            if runner._parse(r.command).device == "rx-7900-xtx"]
    assert len(rows) == 8
    errors = {r.id: runner.predict(r).typical / r.value - 1 for r in rows}
    assert all(abs(e) < 0.25 for e in errors.values()), errors

    def at(batch: int) -> float:
        row = next(r for r in rows if runner._parse(r.command).batch == batch and runner._parse(r.command).quant == "q2_k")
        return runner.predict(row).typical

    assert at(8) < 0.5 * at(1)
