"""The published-measurement suite as a regression guard (benchmarks/validate_inference.py prints it), every row
priced through its `sizeup estimate ...` command line.

Targets from issue 4: median absolute error <= 15% on decode tokens/s and <= 5% on memory."""

import statistics

from tests.validation.bench import args, device, error, load_benchmark, predict, rows

BASE = rows("inference_measurements.yaml")
TUNED = rows("inference_measurements_tuned_*.yaml")


def _device_rows():
    bench = load_benchmark("validate_inference")
    return [r for path in bench.files("devices") for r in rows(path.name)]


def test_the_suite_is_large_and_sourced():
    assert len(BASE) >= 40
    assert all(r.source and r.get("retrieved") and r.value > 0 for r in BASE)


def test_median_errors_meet_the_targets():
    errors = {"decode": [], "memory": []}
    for row in BASE:
        group = {"decode_tokens_per_s": "decode", "model_file_bytes": "memory"}.get(row.metric)
        if group:
            errors[group].append(abs(error(row)))
    assert len(errors["decode"]) >= 25 and len(errors["memory"]) >= 8
    assert statistics.median(errors["decode"]) <= 0.15
    assert statistics.median(errors["memory"]) <= 0.05


def test_prefill_on_derived_peaks_is_predicted_and_near_the_measurement():
    """Issue 17: devices without a published compute peak were priced as free compute (M3 Max 21x, 3080 Ti 9x
    the measured prefill); with derived peaks every row is predicted, and those rows land within 30%."""
    derived_rows = 0
    for row in BASE:
        if row.metric != "prefill_tokens_per_s":
            continue
        assert predict(row) is not None, row.id
        dev = device(row)
        published_16bit = {"fp16", "bf16"} & set(dev.peak_flops_per_s) - {
            k.partition(".")[2] for k in dev.derived_peaks if k.startswith("tensor.")}
        if not published_16bit and "vector.fp32" in dev.derived_peaks or "tensor.fp16" in dev.derived_peaks:
            derived_rows += 1
            assert abs(error(row)) <= 0.30, (row.id, error(row))
    assert derived_rows >= 6


def test_decode_on_the_added_devices_holds_the_catalog_accuracy():
    """Issue 17: published llama.cpp decode results for the devices added with it (rows gathered after the
    pricing model, a check set: GeForce, workstation, Apple M1-M4, AMD, Arc, Arm CPUs) within the decode
    accuracy of the base set (median <= 15%)."""
    errors = []
    for row in _device_rows():
        if row.metric == "decode_tokens_per_s":
            assert predict(row) is not None, row.id
            errors.append(abs(error(row)))
    assert len(errors) >= 80
    assert statistics.median(errors) <= 0.15


def _prefill_errors(selected, vendors):
    errors = []
    for row in selected:
        if row.metric != "prefill_tokens_per_s" or args(row).engine != "llama.cpp":
            continue
        if device(row).vendor not in vendors:
            continue
        errors.append(abs(error(row)))
    errors.sort()
    return errors, errors[min(len(errors) - 1, int(round(0.9 * (len(errors) - 1))))]


def test_llamacpp_prefill_on_the_tuned_rows_with_the_kernel_table():
    """Issue 18: the base file's pp512 rows are the rows kernels.yaml's fractions were fit on (TUNED): with
    MMQ/cuBLAS per architecture they land within median 25% and p90 60% (the generic matmul default gave
    H100 PCIe Q4_K_M 29,068 tok/s against 8,125 measured, p90 169%)."""
    assert all(r.role == "tuned" for r in BASE if r.metric == "prefill_tokens_per_s")
    errors, p90 = _prefill_errors(BASE, {"nvidia", "apple"})
    assert len(errors) >= 30
    assert statistics.median(errors) <= 0.25 and p90 <= 0.60


def test_llamacpp_prefill_on_the_check_rows_meets_the_issue_18_target():
    """Issue 18 target on rows NOT used to fit kernels.yaml (the issue-17 device files, CHECK set): llama.cpp
    pp512 on CUDA and Apple devices within median 25% and p90 60%; the CUDA rows alone too."""
    selected = _device_rows()
    assert all(r.role == "check" for r in selected)
    errors, p90 = _prefill_errors(selected, {"nvidia", "apple"})
    assert len(errors) >= 80
    assert statistics.median(errors) <= 0.25 and p90 <= 0.60
    cuda, cuda_p90 = _prefill_errors(selected, {"nvidia"})
    assert len(cuda) >= 10
    assert statistics.median(cuda) <= 0.25 and cuda_p90 <= 0.60


def _amd_intel_prefill(selected):
    from tests.validation.bench import runner  # noqa: F401
    from validation.tables import kernels_module

    out = []
    for row in selected:
        a, dev = args(row), device(row)
        if row.metric != "prefill_tokens_per_s" or a.engine != "llama.cpp" or dev.vendor not in ("amd", "intel"):
            continue
        kernel = kernels_module().select_kernel("llama.cpp", a.quant, dev, False, a.prompt)
        out.append((row.id, kernel.name if kernel else None, error(row)))
    return out


def test_amd_and_intel_prefill_runs_the_hip_and_sycl_kernels():
    """Issue 18: RDNA3 under HIP prefills Q2_K/Q6_K/F16 with dequantize + rocBLAS and the other quantized formats
    with WMMA-MMQ; Arc under SYCL with dequantize + oneDNN. The TUNED rows (inference_measurements_tuned_*.yaml,
    one per kernel, the fit) come back within 5%; before the entries the device default put RX 7900 XTX pp2048 at
    +80% and Arc B580 pp512 at +126%."""
    tuned = _amd_intel_prefill(TUNED)
    assert {k for _, k, _ in tuned} == {"hip-rocblas", "hip-mmq-wmma", "sycl-onednn-dequant-gemm"}
    assert all(abs(e) <= 0.05 for _, _, e in tuned), tuned


def test_amd_and_intel_prefill_on_the_check_rows():
    """CHECK rows, not fit (inference_measurements_amd_intel_kernels.yaml): the rocBLAS fraction fit on a W7800
    (27B, 2024 build) predicts an RX 7900 XTX 1B row of a 2026 build within 10%; the 1B/1.5B rows of the MMQ and
    SYCL kernels stay optimistic (+45%, +109%: small GEMMs fill the GPU less than the 7-8B rows fit on), yet every
    check row is closer than the device default (+152%, +181%, +330% before)."""
    checks = dict((i, (k, e)) for i, k, e in _amd_intel_prefill(_device_rows()))
    assert len(checks) >= 3
    assert abs(checks["llamacpp-rx-7900-xtx-llama-3.2-1b-q6k-pp2048-ub512-rocblas"][1]) <= 0.10
    assert all(0 < e <= 1.2 for _, e in checks.values()), checks
