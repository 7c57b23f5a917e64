"""The matrix kernel an engine really runs (a kernel table: data/efficiency/kernels.yaml, `kernels: ENGINE: NAME:
entry`) and the peak its achieved fraction is of. An engine's execution model (engines/base.py) asks its table here;
price/execution.py turns the kernel's fraction into the fractions the roofline prices matmuls at.

llama.cpp on CUDA prefills quantized weights with MMQ (int8 mma tiles: a fraction of the int8 peak, not of the
fp16 one) and F16 weights with cuBLAS at fp16 accumulation; on AMD RDNA3 (HIP) with MMQ on int8 WMMA or, for the
formats MMQ is slow on, dequantize + rocBLAS; on Intel Arc (SYCL) with dequantize + oneDNN fp16 GEMM on XMX; at
decode (batch <= 8) MMVQ streams the weights once. A llama.cpp build with another backend (`backend`, e.g. Vulkan on any
of these GPUs: coopmat2 on NVIDIA, KHR cooperative matrices on RDNA3/4 and Xe2, the scalar shader elsewhere) selects
only the entries of that backend; entries without a `backend` belong to the device's default one.
`matmul_fraction` turns the kernel's fraction of its own peak into the fraction of the peak the ledger prices
matmuls at, so the roofline stays one model with one set of peaks.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from sizeup.errors import CatalogError
from sizeup.hardware.catalog import builtin_data_dir, read_yaml
from sizeup.ranges import Range

__all__ = ["Kernel", "NATIVE_PEAKS", "select_kernel", "kernel_peak", "memory_class", "int32_rate",
           "BACKENDS", "default_backend", "check_backend"]

_FLOAT_FORMATS = {"f16", "fp16", "bf16", "fp32", "f32"}

BACKENDS = ("cuda", "hip", "sycl", "metal", "vulkan", "cpu")
"""llama.cpp's compute backends a build may be made with (GGML_CUDA, GGML_HIP, GGML_SYCL, GGML_METAL, GGML_VULKAN)."""
_NATIVE = {"nvidia": "cuda", "amd": "hip", "intel": "sycl", "apple": "metal"}
_VULKAN_VENDORS = ("nvidia", "amd", "intel")
"""Vendors whose GPUs llama.cpp's Vulkan backend runs on with a kernel entry here (Apple's only through MoltenVK:
not modelled)."""


def default_backend(device) -> str | None:
    """The backend llama.cpp is built with for `device` by default: 'cpu' on a CPU, else the vendor's own."""
    if device.kind == "cpu":
        return "cpu"
    return _NATIVE.get(device.vendor) if device.kind in ("gpu", "soc") else None


def check_backend(backend: str | None, device) -> None:
    """Raise a one-line ConfigError when `device` cannot run llama.cpp's `backend` (None: the default, always)."""
    from sizeup.errors import ConfigError

    if backend is None:
        return
    if backend not in BACKENDS:
        raise ConfigError(f"--backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    native = default_backend(device)
    if backend == native or backend == "vulkan" and device.kind in ("gpu", "soc") and device.vendor in _VULKAN_VENDORS:
        return
    can = [b for b in (native, "vulkan" if device.kind in ("gpu", "soc") and device.vendor in _VULKAN_VENDORS else None)
           if b]
    hint = (" (layers on the host CPU: --gpu-layers 0 --cpu NAME)" if backend == "cpu" and device.kind != "cpu"
            else "")
    raise ConfigError(f"--backend {backend}: {device.id} ({device.vendor} {device.kind}) runs llama.cpp with "
                      f"{' or '.join(can) or 'no modelled backend'}{hint}")


@dataclass(frozen=True, slots=True)
class Kernel:
    engine: str
    name: str
    description: str
    peak: str
    """'int8', 'fp16' (the dense 16-bit matrix peak), 'fp16_acc16', 'int32' (the integer ALU rate: MMVQ's
    dequantization at decode), 'alu' (instructions over every lane: an engine's counted decode instructions),
    'fp8' / 'fp4' (NATIVE_PEAKS: the matmuls of that precision on its own tensor units, e.g. an NVFP4 GEMM with FP4
    activations on Blackwell; the fraction prices those matmuls only) or 'device-default' (the device kind's
    efficiency applies unchanged)."""
    fraction: Range | None
    basis: str
    source: str
    memory: Range | None = None
    """Fraction of the peak memory bandwidth the kernel reaches (None: the device default)."""
    table: str = "kernels.yaml"
    """Where the entry was read (an estimate names it beside the kernel)."""
    vector: Range | None = None
    """Fraction of the vector peak where the device runs matrix products on its vector units (Apple GPUs: no
    matrix peak in the catalog, so matmuls are priced at the vector fp32 peak with the vector fraction); None: the
    device default."""


NATIVE_PEAKS = frozenset({"fp8", "fp4"})
"""Kernel peaks that are a tensor precision the ledger prices its matmuls at directly: a kernel on one of them sets
the fraction of that precision's matmuls (matmul@fp4) and leaves every other precision at the device default."""

DEFAULT_TABLE = "efficiency/kernels.yaml"
"""The kernel table of data/ an engine reads unless it names its own (same schema, one file per engine)."""


def _table(table: str = DEFAULT_TABLE) -> tuple[dict, str]:
    """The kernel table `table` (one cached copy per file however it is named: `_table()` and
    `_table(DEFAULT_TABLE)` are the same dict, which benchmarks/validation/tables.py edits in place)."""
    return _read_table(table)


@lru_cache(maxsize=8)
def _read_table(table: str) -> tuple[dict, str]:
    path = builtin_data_dir() / table
    data = read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("kernels"), dict) or not data.get("source"):
        raise CatalogError(f"{path}: expected 'kernels' (engine -> kernel -> entry) and a 'source'")
    return data["kernels"], f"{data['source']} (read {data.get('retrieved', '?')})"


def _format_matches(spec: object, weights: str) -> bool:
    if spec == "any":
        return True
    if spec == "quantized":
        return weights not in _FLOAT_FORMATS
    return isinstance(spec, list) and weights in spec


def select_kernel(engine: str, weights: str, device, decode: bool, batch_tokens: int,
                  build_date: str | None = None, backend: str | None = None, table: str = DEFAULT_TABLE) -> Kernel | None:
    """The kernel `engine` runs for `weights` on `device` in this phase, or None when the table has none
    (the device kind's default efficiency then applies). `build_date` ('YYYY-MM-DD'): an older build, whose
    superseded kernels (entries with `until` after it) replace the current ones; None: the current build.
    `backend`: the llama.cpp build's backend (BACKENDS); None: the device's default one. An entry without a
    `backend` belongs to the device's default backend."""
    kernels, source = _table(table)
    native = default_backend(device)
    want = backend or native
    for name, entry in (kernels.get(engine) or {}).items():
        if (entry.get("backend") or native) != want:
            continue
        if entry.get("until") and (build_date is None or build_date >= str(entry["until"])):
            continue
        if entry.get("phase") != ("decode" if decode else "prefill"):
            continue
        if not _format_matches(entry.get("formats"), weights.lower()):
            continue
        if batch_tokens < entry.get("min_batch_tokens", 0) or batch_tokens > entry.get("max_batch_tokens", 1 << 62):
            continue
        vendors = entry.get("vendors") or [entry.get("vendor", "nvidia")]
        if device.vendor not in vendors or device.kind not in ("gpu", "soc"):
            continue
        if entry.get("architectures") and device.architecture not in entry["architectures"]:
            continue
        by_arch = entry.get("by_architecture")
        if not by_arch:
            classes = (kernels[engine].get(entry["memory_like"], {}) if entry.get("memory_like") else entry)
            by_class = classes.get("memory_by_class") or {}
            mem = by_class.get(f"{memory_class(device)}@{device.architecture}") or by_class.get(memory_class(device))
            memory = Range(float(mem["low"]), float(mem["typical"]), float(mem["high"])) if mem else None
            basis = mem["basis"] if mem else ""
            cap = _issue_cap(entry, device)
            if memory is not None and cap is not None:
                memory = Range(min(memory.low, cap[0].low), min(memory.typical, cap[0].typical),
                               min(memory.high, cap[0].high))
                basis = f"{basis}; {cap[1]}"
            dequant = _dequant_fraction(entry, weights.lower(), device)
            if dequant is not None:
                return Kernel(engine, name, entry.get("description", ""), "int32", dequant[0],
                              f"{basis}; {dequant[1]}" if basis else dequant[1], source, memory)
            return Kernel(engine, name, entry.get("description", ""), entry["peak"], None, basis, source, memory)
        arch = by_arch.get(device.architecture or "") or by_arch["default"]
        fraction = Range(float(arch["low"]), float(arch["typical"]), float(arch["high"]))
        derived = "" if device.architecture in by_arch else " (derived: no tuned row for this architecture)"
        fraction, later = _later_builds(entry, fraction, build_date, device.architecture or "")
        return Kernel(engine, name, entry.get("description", ""), entry["peak"], fraction,
                      arch["basis"] + derived + later, source)
    return None


def _later_builds(entry: dict, fraction: Range, build_date: str | None, architecture: str) -> tuple[Range, str]:
    """The fraction of a build from each `since` date of the entry's `later_builds` on (None: the current build):
    the fitted fraction (of the builds its rows ran) times the speedup measured for the change merged that day, by
    architecture (`factor_by_architecture`, its `default` for the others)."""
    note = ""
    for step in entry.get("later_builds") or ():
        if build_date is not None and build_date < str(step["since"]):
            continue
        by_arch = step["factor_by_architecture"]
        f = by_arch.get(architecture) or by_arch["default"]
        fraction = Range(fraction.low * float(f["low"]), fraction.typical * float(f["typical"]),
                         fraction.high * float(f["high"]))
        note += f"; x{float(f['typical']):g} for builds from {step['since']} ({step['change']}: {f['basis']})"
    return fraction, note


def _dequant_fraction(entry: dict, weights: str, device) -> tuple[Range, str] | None:
    """MMVQ's dequantization as a compute term (CUDA, and HIP, which compiles the same mmvq.cu/vecdotq.cuh): mmvq.cu calls the format's vec_dot once per weight block and per
    column (`for j < ncols_y: tmp[j][i] += vec_dot_q_cuda(...)`), so each weight costs `ops` integer instructions per
    token of the batch and a matmul's 2 x weights x batch FLOPs take weights x batch x ops / the integer rate: as a
    fraction of that rate, 2 / ops matmul FLOPs per integer op. None where the format or the architecture has no
    count (the device default then prices the matmul)."""
    ops = (entry.get("dequant_int_ops_per_weight") or {}).get(weights)
    lanes = (entry.get("int32_lanes_per_fp32_lane") or {}).get(device.architecture or "")
    if not ops or not lanes or not int32_rate(device, entry):
        return None
    f = 2.0 / float(ops["ops"])
    return Range(f, f, f), (f"dequantization {ops['ops']} integer ops per weight ({ops['basis']}) on "
                            f"{lanes['ratio']:g} int32 lane per fp32 lane ({lanes['basis']})")


def _issue_cap(entry: dict, device) -> tuple[Range, str] | None:
    """A kernel whose loads per SM per clock bound its bandwidth (DMMV F16: two scalar halves per thread per step):
    SM-clocks per second (the vector fp32 peak / 2 / the fp32 lanes per SM) x bytes per SM-clock, as a fraction of
    the peak memory bandwidth; None without both counts."""
    per_clock = entry.get("bytes_per_sm_clock")
    lanes = (entry.get("fp32_lanes_per_sm") or {}).get(device.architecture or "")
    fp32 = device.vector_flops_per_s.get("fp32")
    if not per_clock or not lanes or not fp32 or not device.memory_bandwidth_bytes_per_s:
        return None
    sm_clocks = fp32 / 2 / float(lanes["lanes"])
    f = {k: sm_clocks * float(per_clock[k]) / device.memory_bandwidth_bytes_per_s for k in ("low", "typical", "high")}
    return Range(f["low"], f["typical"], f["high"]), (f"capped at {f['typical']:.2f} of the bandwidth: "
                                                      f"{per_clock['typical']} B per SM-clock ({per_clock['basis']}) x "
                                                      f"{sm_clocks / 1e9:.0f} G SM-clocks/s ({lanes['basis']})")


def int32_rate(device, entry: dict | None = None) -> float | None:
    """32-bit integer instructions per second: the vector fp32 peak / 2 (an FMA is 2 FLOPs) x the int32 lanes per
    fp32 lane of the device's architecture (kernels.yaml: the `entry`'s table, else the first llama.cpp entry that
    lists the architecture), or None when either is unknown."""
    arch = device.architecture or ""
    if entry is None:
        entry = next((e for e in (_table()[0].get("llama.cpp") or {}).values()
                      if arch in (e.get("int32_lanes_per_fp32_lane") or {})), {})
    lanes = (entry.get("int32_lanes_per_fp32_lane") or {}).get(arch)
    fp32 = device.vector_flops_per_s.get("fp32")
    return fp32 / 2 * float(lanes["ratio"]) if lanes and fp32 else None


def memory_class(device) -> str:
    """'hbm', 'gddr' or 'lpddr' (Apple's unified memory where the catalog names no type), else ''."""
    kind = (device.memory_type or "").lower()
    for name in ("hbm", "gddr", "lpddr"):
        if kind.startswith(name):
            return name
    return "lpddr" if device.vendor == "apple" and device.kind == "soc" else ""


def kernel_peak(device, kernel: Kernel) -> float | None:
    """FLOP/s of the peak the kernel's fraction is of, or None when the device lists none."""
    if kernel.peak == "int8":
        return device.peak_flops_per_s.get("int8")
    if kernel.peak == "fp16_acc16":
        return device.fp16_acc16_flops_per_s or device.peak_flops_per_s.get("fp16")
    if kernel.peak == "fp16" or kernel.peak in NATIVE_PEAKS:
        return device.peak_flops_per_s.get(kernel.peak)
    if kernel.peak == "int32":
        return int32_rate(device)
    if kernel.peak == "alu":  # instructions per second over every lane: the vector fp32 peak / 2 (an FMA is 2 FLOPs)
        fp32 = device.vector_flops_per_s.get("fp32")
        return fp32 / 2 if fp32 else None
    return None
