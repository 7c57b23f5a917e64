"""Predicted vs published inference measurements (tests/validation/inference_measurements.yaml).

Prints one row per measurement and, per metric group, the median and 90th-percentile absolute error.
Targets (issue 4): median |error| <= 15% on decode tokens/s and <= 5% on memory, out of the box.
Issue 18: llama.cpp prefill within median 25% / p90 60% on CUDA and Apple. The base file's llama.cpp pp512 and tg rows
are TUNED rows (data/efficiency/kernels.yaml's MMQ and cuBLAS fractions were fit on them), and so are the
inference_measurements_tuned_*.yaml rows (the AMD HIP and Intel SYCL fractions); the other device files
(--set devices) are the CHECK set, not used for any fit. --vendor keeps one vendor's devices.
--set vulkan: the llama.cpp Vulkan-backend rows (inference_measurements_vulkan.yaml, each row `backend: vulkan`), its
TUNED rows (`set: tuned`, the Vulkan fractions of kernels.yaml were fit on them) and CHECK rows reported apart, per vendor;
rows with a `driver` (Mesa ANV 24.2.8 on Arc: a driver-era gap the estimate has no input for) form their own group.

Run from the repo root: python benchmarks/validate_inference.py [--rows]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import yaml  # noqa: E402

from sizeup.hardware.catalog import load_catalog  # noqa: E402
from sizeup.ingest.hf_config import load_model  # noqa: E402
from sizeup.workload.inference import InferenceConfig, estimate_inference  # noqa: E402
from sizeup.workload.quantize import get_format, weight_bytes  # noqa: E402

DATA = ROOT / "tests" / "validation" / "inference_measurements.yaml"
# Rows kernels.yaml's AMD (HIP) and Intel (SYCL) fractions were fit on: TUNED, read with the base file.
TUNED_DATA = sorted((ROOT / "tests" / "validation").glob("inference_measurements_tuned_*.yaml"))
# Rows for the devices added by issue 17 (and the AMD/Intel kernel check rows of issue 18), gathered after the
# pricing model and not tuned on: a check set.
VULKAN_DATA = ROOT / "tests" / "validation" / "inference_measurements_vulkan.yaml"
DEVICE_DATA = sorted(p for p in (ROOT / "tests" / "validation").glob("inference_measurements_*.yaml")
                     if not p.name.startswith("inference_measurements_tuned_") and p != VULKAN_DATA)
DECODE_TOKENS_UNSTATED = 128
"""Output length assumed where a source (e.g. an Ollama run) does not state it; batch-1 decode speed barely
depends on it at these lengths."""
GROUPS = {"decode_tokens_per_s": "decode tokens/s", "total_decode_tokens_per_s": "batched throughput",
          "prefill_tokens_per_s": "prefill tokens/s", "model_file_bytes": "memory", "peak_memory_bytes": "memory"}
_KV = {"f16": "fp16", "fp16": "fp16", "bf16": "bf16", "fp8": "fp8", "q8_0": "q8_0", "q4_0": "q4_0"}


def _modelled(engine: str) -> bool:
    """Whether sizeup has an engine file for `engine` ('vllm', 'vllm@0.10') at that release."""
    from sizeup.engines import parse_engine
    from sizeup.errors import ConfigError

    try:
        parse_engine(engine)
    except ConfigError:
        return False
    return True


def predict(row: dict, catalog) -> float | None:
    """The prediction for a row, or None when the device's compute is unknown (no published or derived peak)."""
    arch = load_model(row["model"])
    quant = row["quant"]
    if row["engine"].partition("@")[0] != "llama.cpp":  # llama.cpp's f16 is the GGUF F16 format; elsewhere plain fp16
        quant = {"f16": "fp16"}.get(quant, quant)
    if row["metric"] == "model_file_bytes":
        return float(sum(weight_bytes(arch, get_format(quant)).values()))
    device = catalog.device(row["device"])
    engine = row["engine"] if _modelled(row["engine"]) else "hf"  # an engine sizeup has no file for: hf stands in
    prompt = row.get("prompt_tokens") or 1
    output = row.get("output_tokens") or (DECODE_TOKENS_UNSTATED if row["metric"] == "decode_tokens_per_s" else 0)
    cfg = InferenceConfig(batch=row.get("batch") or 1, prompt=prompt, output=output if row["metric"] != "prefill_tokens_per_s" else 0,
                          weights=quant, kv_dtype=_KV.get(row.get("kv_dtype") or "f16", "fp16"), engine=engine,
                          gpus=row.get("gpus") or 1, backend=row.get("backend"), build_date=row.get("build_date"))
    e = estimate_inference(arch, device, cfg)
    if row["metric"] == "decode_tokens_per_s":
        return e.decode.tokens_per_s.typical / cfg.batch if e.decode.compute_priced else None
    if row["metric"] == "prefill_tokens_per_s":
        return e.prefill.tokens_per_s.typical if e.prefill.compute_priced else None
    if row["metric"] == "total_decode_tokens_per_s":
        if not (e.prefill.compute_priced and e.decode.compute_priced):
            return None
        # static batch, end to end: B·output tokens over the prefill plus output decode steps
        elapsed = e.prefill.latency_s.typical + output * e.decode.latency_s.typical
        return cfg.batch * output / elapsed
    if row["metric"] == "peak_memory_bytes":
        return float(e.memory.total_bytes)
    raise ValueError(f"unknown metric {row['metric']!r}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", action="store_true", help="print every row")
    parser.add_argument("--set", choices=("base", "devices", "all", "vulkan"), default="base",
                        help="base: inference_measurements.yaml; devices: the issue-17 device files (check set)")
    parser.add_argument("--fit", action="store_true",
                        help="with --set vulkan: bisect, per TUNED row, the kernel fraction that reproduces it")
    parser.add_argument("--vendor", help="only rows on this vendor's devices (nvidia, amd, intel, apple, ...)")
    args = parser.parse_args()
    catalog = load_catalog(include_user=False)
    if args.set == "vulkan":
        return fit_vulkan(catalog) if args.fit else vulkan_report(catalog, args.rows, args.vendor)
    files = {"base": [DATA, *TUNED_DATA], "devices": DEVICE_DATA, "all": [DATA, *TUNED_DATA, *DEVICE_DATA]}[args.set]
    print({"base": "set: base (llama.cpp prefill and batch-1 decode rows TUNED: kernels.yaml was fit on them)\n",
           "devices": "set: devices (CHECK rows: no fit used them)\n",
           "all": "set: all (TUNED base rows and CHECK device rows together)\n"}[args.set])
    rows = [row for path in files for row in yaml.safe_load(path.read_text())]
    if args.vendor:
        rows = [r for r in rows if r.get("device") and catalog.device(r["device"]).vendor == args.vendor]
    errors: dict[str, list[float]] = {}
    table, skipped = [], []
    for row in rows:
        predicted = predict(row, catalog)
        if predicted is None:
            skipped.append(row["id"])
            continue
        error = predicted / row["value"] - 1
        group = GROUPS[row["metric"]]
        errors.setdefault(group, []).append(abs(error))
        table.append((row["id"], row["device"], row["quant"], row["metric"], row["value"], predicted, error))
    if args.rows:
        print("| id | device | quant | metric | measured | predicted | error |")
        print("|---|---|---|---|---:|---:|---:|")
        for r in table:
            print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:,.4g} | {r[5]:,.4g} | {r[6]:+.1%} |")
        print()
    print("| metric | rows | median abs error | p90 abs error |")
    print("|---|---:|---:|---:|")
    for group, values in errors.items():
        values.sort()
        p90 = values[min(len(values) - 1, int(round(0.9 * (len(values) - 1))))]
        print(f"| {group} | {len(values)} | {statistics.median(values):.1%} | {p90:.1%} |")
    if skipped:
        print(f"\nnot predicted (the device lists no compute peak for these FLOPs): {', '.join(skipped)}")


def _p90(values: list[float]) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(0.9 * (len(values) - 1))))]


def fit_vulkan(catalog) -> None:
    """Per TUNED Vulkan row: the fraction of the kernel's peak (kernels.yaml) at which the whole estimate (compute,
    memory, overhead) equals the measurement, by bisection on the kernel's table entry (restored afterwards)."""
    from sizeup.engines import kernels

    table = kernels._table()[0]["llama.cpp"]
    print("| id | kernel | architecture | fitted fraction | in kernels.yaml |")
    print("|---|---|---|---:|---:|")
    for row in (r for r in yaml.safe_load(VULKAN_DATA.read_text()) if r["set"] == "tuned"):
        device = catalog.device(row["device"])
        kernel = kernels.select_kernel("llama.cpp", row["quant"], device, row["metric"] != "prefill_tokens_per_s",
                                       row.get("prompt_tokens") or 1, backend=row["backend"])
        by_arch = table[kernel.name]["by_architecture"]
        key = device.architecture if device.architecture in by_arch else "default"
        saved, lo, hi = dict(by_arch[key]), 1e-3, 2.0
        for _ in range(40):
            mid = (lo * hi) ** 0.5
            by_arch[key] = {**saved, "low": mid, "typical": mid, "high": mid}
            lo, hi = (lo, mid) if predict(row, catalog) > row["value"] else (mid, hi)
        by_arch[key] = saved
        print(f"| {row['id']} | {kernel.name} | {key} | {mid:.4f} | {saved['typical']} |")


def vulkan_report(catalog, show_rows: bool, vendor: str | None) -> None:
    """The Vulkan-backend rows: per set (tuned / check), vendor and metric, the median and p90 |error|."""
    rows = yaml.safe_load(VULKAN_DATA.read_text())
    print("set: vulkan (llama.cpp --backend vulkan; TUNED rows fit kernels.yaml's Vulkan fractions, CHECK rows did not)\n")
    groups: dict[tuple[str, str, str], list[float]] = {}
    if show_rows:
        print("| set | id | device | quant | metric | measured | predicted | error |")
        print("|---|---|---|---|---|---:|---:|---:|")
    for row in rows:
        dev = catalog.device(row["device"])
        if vendor and dev.vendor != vendor:
            continue
        predicted = predict(row, catalog)
        if predicted is None:
            continue
        error = predicted / row["value"] - 1
        set_ = row["set"] if not row.get("driver") else f"{row['set']} ({row['driver']}: not modelled)"
        groups.setdefault((set_, dev.vendor, GROUPS[row["metric"]]), []).append(abs(error))
        if show_rows:
            print(f"| {row['set']} | {row['id']} | {row['device']} | {row['quant']} | {row['metric']} | "
                  f"{row['value']:,.4g} | {predicted:,.4g} | {error:+.1%} |")
    if show_rows:
        print()
    print("| set | vendor | metric | rows | median abs error | p90 abs error |")
    print("|---|---|---|---:|---:|---:|")
    for (set_, vend, group), values in sorted(groups.items()):
        print(f"| {set_} | {vend} | {group} | {len(values)} | {statistics.median(values):.1%} | {_p90(values):.1%} |")


if __name__ == "__main__":
    main()
