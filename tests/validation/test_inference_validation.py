"""The published-measurement suite as a regression guard (benchmarks/validate_inference.py prints it).

Targets from issue 4: median absolute error <= 15% on decode tokens/s and <= 5% on memory."""

import statistics

import yaml

from tests.validation.bench import load_benchmark, load_rows

ROWS = load_rows("inference_measurements.yaml")


def _benchmark():
    return load_benchmark("validate_inference")


def test_the_suite_is_large_and_sourced():
    assert len(ROWS) >= 40
    assert all(r["source"] and r["retrieved"] and r["value"] > 0 for r in ROWS)
    assert len({r["id"] for r in ROWS}) == len(ROWS)


def test_median_errors_meet_the_targets():
    from sizeup.hardware.catalog import load_catalog

    bench, catalog = _benchmark(), load_catalog(include_user=False)
    errors = {"decode": [], "memory": []}
    for row in ROWS:
        group = {"decode_tokens_per_s": "decode", "model_file_bytes": "memory", "peak_memory_bytes": "memory"}.get(
            row["metric"])
        if group:
            predicted = bench.predict(row, catalog)
            errors[group].append(abs(predicted / row["value"] - 1))
    assert len(errors["decode"]) >= 25 and len(errors["memory"]) >= 8
    assert statistics.median(errors["decode"]) <= 0.15
    assert statistics.median(errors["memory"]) <= 0.05


def test_prefill_on_derived_peaks_is_predicted_and_near_the_measurement():
    """Issue 17: devices without a published compute peak were priced as free compute (M3 Max 21x, 3080 Ti 9x
    the measured prefill); with derived peaks every row is predicted, and those rows land within 30%."""
    from sizeup.hardware.catalog import load_catalog

    bench, catalog = _benchmark(), load_catalog(include_user=False)
    derived_rows = 0
    for row in ROWS:
        if row["metric"] != "prefill_tokens_per_s":
            continue
        predicted = bench.predict(row, catalog)
        assert predicted is not None, row["id"]
        device = catalog.device(row["device"])
        published_16bit = {"fp16", "bf16"} & set(device.peak_flops_per_s) - {
            k.partition(".")[2] for k in device.derived_peaks if k.startswith("tensor.")}
        if not published_16bit and "vector.fp32" in device.derived_peaks or "tensor.fp16" in device.derived_peaks:
            derived_rows += 1
            assert abs(predicted / row["value"] - 1) <= 0.30, (row["id"], predicted, row["value"])
    assert derived_rows >= 6


def test_decode_on_the_added_devices_holds_the_catalog_accuracy():
    """Issue 17: published llama.cpp decode results for the devices added with it (rows gathered after the
    pricing model, a check set: GeForce, workstation, Apple M1-M4, AMD, Arc, Arm CPUs) within the decode
    accuracy of the base set (median <= 15%)."""
    from sizeup.hardware.catalog import load_catalog

    bench, catalog = _benchmark(), load_catalog(include_user=False)
    rows = [r for path in bench.DEVICE_DATA for r in yaml.safe_load(path.read_text())]
    assert len({r["id"] for r in rows}) == len(rows)
    assert all(r["source"] and r["retrieved"] and r["value"] > 0 for r in rows)
    errors = []
    for row in rows:
        if row["metric"] == "decode_tokens_per_s":
            predicted = bench.predict(row, catalog)
            assert predicted is not None, row["id"]
            errors.append(abs(predicted / row["value"] - 1))
    assert len(errors) >= 80
    assert statistics.median(errors) <= 0.15


def _prefill_errors(rows, vendors):
    from sizeup.hardware.catalog import load_catalog

    bench, catalog = _benchmark(), load_catalog(include_user=False)
    errors = []
    for row in rows:
        if row["metric"] != "prefill_tokens_per_s" or row["engine"] != "llama.cpp":
            continue
        if catalog.device(row["device"]).vendor not in vendors:
            continue
        errors.append(abs(bench.predict(row, catalog) / row["value"] - 1))
    errors.sort()
    return errors, errors[min(len(errors) - 1, int(round(0.9 * (len(errors) - 1))))]


def test_llamacpp_prefill_on_the_tuned_rows_with_the_kernel_table():
    """Issue 18: the base file's pp512 rows are the rows kernels.yaml's fractions were fit on (TUNED): with
    MMQ/cuBLAS per architecture they land within median 25% and p90 60% (the generic matmul default gave
    H100 PCIe Q4_K_M 29,068 tok/s against 8,125 measured, p90 169%)."""
    errors, p90 = _prefill_errors(ROWS, {"nvidia", "apple"})
    assert len(errors) >= 30
    assert statistics.median(errors) <= 0.25 and p90 <= 0.60


def test_llamacpp_prefill_on_the_check_rows_meets_the_issue_18_target():
    """Issue 18 target on rows NOT used to fit kernels.yaml (the issue-17 device files, CHECK set): llama.cpp
    pp512 on CUDA and Apple devices within median 25% and p90 60%; the CUDA rows alone too."""
    bench = _benchmark()
    rows = [r for path in bench.DEVICE_DATA for r in yaml.safe_load(path.read_text())]
    errors, p90 = _prefill_errors(rows, {"nvidia", "apple"})
    assert len(errors) >= 80
    assert statistics.median(errors) <= 0.25 and p90 <= 0.60
    cuda, cuda_p90 = _prefill_errors(rows, {"nvidia"})
    assert len(cuda) >= 10
    assert statistics.median(cuda) <= 0.25 and cuda_p90 <= 0.60


def _amd_intel_prefill(paths):
    from sizeup.hardware.catalog import load_catalog
    from sizeup.engines.kernels import select_kernel

    bench, catalog = _benchmark(), load_catalog(include_user=False)
    out = []
    for row in (r for path in paths for r in yaml.safe_load(path.read_text())):
        device = catalog.device(row["device"])
        if row["metric"] != "prefill_tokens_per_s" or row["engine"] != "llama.cpp" or device.vendor not in (
                "amd", "intel"):
            continue
        kernel = select_kernel("llama.cpp", row["quant"], device, False, row["prompt_tokens"])
        out.append((row["id"], kernel.name if kernel else None, bench.predict(row, catalog) / row["value"] - 1))
    return out


def test_amd_and_intel_prefill_runs_the_hip_and_sycl_kernels():
    """Issue 18: RDNA3 under HIP prefills Q2_K/Q6_K/F16 with dequantize + rocBLAS and the other quantized formats
    with WMMA-MMQ; Arc under SYCL with dequantize + oneDNN. The TUNED rows (inference_measurements_tuned_*.yaml,
    one per kernel, the fit) come back within 5%; before the entries the device default put RX 7900 XTX pp2048 at
    +80% and Arc B580 pp512 at +126%."""
    bench = _benchmark()
    tuned = _amd_intel_prefill(bench.TUNED_DATA)
    assert {k for _, k, _ in tuned} == {"hip-rocblas", "hip-mmq-wmma", "sycl-onednn-dequant-gemm"}
    assert all(abs(e) <= 0.05 for _, _, e in tuned), tuned


def test_amd_and_intel_prefill_on_the_check_rows():
    """CHECK rows, not fit (inference_measurements_amd_intel_kernels.yaml): the rocBLAS fraction fit on a W7800
    (27B, 2024 build) predicts an RX 7900 XTX 1B row of a 2026 build within 10%; the 1B/1.5B rows of the MMQ and
    SYCL kernels stay optimistic (+45%, +109%: small GEMMs fill the GPU less than the 7-8B rows fit on), yet every
    check row is closer than the device default (+152%, +181%, +330% before)."""
    bench = _benchmark()
    checks = dict((i, (k, e)) for i, k, e in _amd_intel_prefill(bench.DEVICE_DATA))
    assert len(checks) >= 3
    assert abs(checks["llamacpp-rx-7900-xtx-llama-3.2-1b-q6k-pp2048-ub512-rocblas"][1]) <= 0.10
    assert all(0 < e <= 1.2 for _, e in checks.values()), checks
