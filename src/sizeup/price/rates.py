"""What each op's time is made of, without numpy: which peak an op runs at, its inverse rates per
efficiency level, and a scalar pricing of a small ledger.

`price.roofline` vectorises the same arithmetic over many ops and devices (numpy); `price_totals` here
gives the totals an estimate needs from a ledger of a few dozen ops without importing numpy, so a
command-line estimate starts at Python's speed. Both take their rates from `inverse_rates`, and a test
holds the two paths equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sizeup.hardware.schema import DeviceSpec
from sizeup.ledger import Ledger, OpKind
from sizeup.errors import CatalogError
from sizeup.memo import IdentityMemo
from sizeup.price.efficiency import (GROUPED, TENSOR_KINDS, Efficiency, device_efficiency, has_grouped, table_efficiency,
                                     tensor_fraction)
from sizeup.ranges import Range

__all__ = ["LEVELS", "SYNCHRONOUS_KINDS", "HALF_RATE", "half_rate_accumulate", "simt_class", "sustained_factor", "tensor_precision", "vector_precision", "ridge_point", "OpClasses", "op_classes",
           "InverseRates", "inverse_rates", "PhaseTotals", "price_totals"]

LEVELS = ("low", "typical", "high")
SYNCHRONOUS_KINDS = frozenset({"cpu"})
"""Device kinds whose host thread computes the op itself, so dispatch overhead adds to op time."""

# Which peak a tensor op of a given dtype runs at, in order of preference. The first entries are what
# frameworks use by default: fp32 matmuls run without TF32 in PyTorch (allow_tf32 is False for
# matmul), while cuDNN convolutions use TF32 by default (torch.backends.cudnn.allow_tf32 = True).
_TENSOR_CHAIN: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {}
for _kind in (*TENSOR_KINDS, GROUPED):
    # a device whose matrix unit lists fp32 (a CPU's measured GEMM rate, an accelerator's MME) uses it
    _fp32 = (("tensor", "tf32"), ("tensor", "fp32"), ("vector", "fp32")) if _kind == "conv" else \
        (("tensor", "fp32"), ("vector", "fp32"))
    _TENSOR_CHAIN |= {
        (_kind, "fp32"): _fp32 + (("tensor", "tf32"), ("tensor", "bf16")),
        (_kind, "tf32"): (("tensor", "tf32"), ("vector", "fp32"), ("tensor", "bf16")),
        (_kind, "bf16"): (("tensor", "bf16"), ("vector", "fp32")),
        (_kind, "fp16"): (("tensor", "fp16"), ("tensor", "bf16"), ("vector", "fp32")),
        (_kind, "fp8"): (("tensor", "fp8"), ("tensor", "fp16"), ("tensor", "bf16"), ("vector", "fp32")),
        (_kind, "int8"): (("tensor", "int8"), ("tensor", "fp16"), ("tensor", "bf16")),
        # FP4 (NVFP4, MXFP4) on FP4 tensor units (Blackwell); elsewhere a weight-only kernel dequantizes the FP4
        # weights in registers and multiplies at 16 bits (a weight-only FP4 kernel on Hopper and Ampere)
        (_kind, "fp4"): (("tensor", "fp4"), ("tensor", "bf16"), ("tensor", "fp16"), ("vector", "fp32")),
        (_kind, "int4"): (("tensor", "int4"), ("tensor", "int8"), ("tensor", "fp16"), ("tensor", "bf16")),
        (_kind, "fp64"): (("tensor", "fp64"), ("vector", "fp64")),
    }


def tensor_precision(device: DeviceSpec, kind: str, dtype: str) -> tuple[str, str, float] | None:
    """(unit, precision, FLOP/s) a tensor op of `dtype` runs at on `device`, or None if unknown."""
    chain = _TENSOR_CHAIN.get((kind, dtype)) or _TENSOR_CHAIN[(kind, "fp32")]
    for unit, precision in chain:
        table = device.peak_flops_per_s if unit == "tensor" else device.vector_flops_per_s
        if precision in table:
            return unit, precision, table[precision]
    return None


def vector_precision(device: DeviceSpec, dtype: str) -> tuple[str, float] | None:
    """Elementwise math runs in fp32 registers for fp32/bf16/fp16 tensors (fp64 stays fp64)."""
    for precision in (("fp64",) if dtype == "fp64" else ("fp32",)):
        if precision in device.vector_flops_per_s:
            return precision, device.vector_flops_per_s[precision]
    return None


def ridge_point(device: DeviceSpec, precision: str) -> float | None:
    """FLOPs per byte above which an op at `precision` is compute-bound (peak / bandwidth)."""
    peak = device.peak_flops_per_s.get(precision) or device.vector_flops_per_s.get(precision)
    return peak / device.memory_bandwidth_bytes_per_s if peak else None


HALF_RATE = "fp32acc-half-rate"
"""Efficiency key suffix (kind@fp32acc-half-rate) for the tensor precisions whose FP32-accumulate rate is
half the FP16-accumulate rate (GeForce): there the halved tensor pipe, not operand supply, bounds a kernel."""


def half_rate_accumulate(device: DeviceSpec, precision: str) -> bool:
    """Whether `precision`'s tensor peak on `device` is the halved FP32-accumulate rate of a part that
    lists a full FP16-accumulate rate twice as high (GeForce GA10x/AD10x/GB20x: NVIDIA whitepapers)."""
    acc16 = device.fp16_acc16_flops_per_s
    peak = device.peak_flops_per_s.get(precision)
    return bool(acc16 and peak and precision in ("fp16", "bf16") and peak <= 0.55 * acc16)


SIMT_SHARED_ARCHITECTURES = frozenset({"ampere-ga10x", "ampere-ga10b", "ada", "blackwell-gb20x", "blackwell-gb10"})
"""Architectures whose listed FP32 peak counts FP32 lanes shared with INT32 (NVIDIA GA102 whitepaper: half
of GA10x's 128 FP32 lanes per SM run INT32 instead; AD10x the same; GB20x: all 128 unified FP32/INT32)."""
SIMT_DEDICATED_ARCHITECTURES = frozenset({"volta", "turing", "ampere-ga100", "hopper", "blackwell-gb100"})
"""NVIDIA architectures whose FP32 lanes are all dedicated FP32 (INT32 is a separate pipe)."""


def simt_class(device: DeviceSpec) -> str | None:
    """The efficiency key suffix ('simt' or 'simt-shared') for FP32 matrix work on `device`'s FP32 cores,
    None where the architecture is in neither class (the vector fraction then applies)."""
    if device.architecture in SIMT_DEDICATED_ARCHITECTURES:
        return "simt"
    if device.architecture in SIMT_SHARED_ARCHITECTURES:
        return "simt-shared"
    return None


def simt_fraction(device: DeviceSpec, eff: Efficiency, kind: str) -> Range | None:
    """The achieved fraction of the FP32 vector peak for matrix work of `kind` on the FP32 cores: the
    architecture class's `kind@simt*` entry, only while the vector fraction is still the table's (a
    calibration measured its own)."""
    suffix = simt_class(device)
    table = _table(device)
    if suffix is None or table is None or eff.vector != table.vector:
        return None
    return eff.tensor.get(f"{kind}@{suffix}")


def sustained_factor(device: DeviceSpec) -> float:
    """The share of its compute peaks that `device` holds under sustained dense compute: its data file's
    sustained clock over the clock the peaks are rated at (`rated_clock_mhz` where the vendor rates them below
    the boost clock, else the boost clock) for a power-limited board such as the 70 W T4 or the 400 W H100 NVL,
    else 1. Bandwidth is not scaled: a power cap lowers the SM clock only."""
    rated = device.rated_clock_hz or device.boost_clock_hz
    if device.sustained_clock_hz and rated:
        return min(1.0, device.sustained_clock_hz / rated)
    return 1.0


def _table(device: DeviceSpec) -> Efficiency | None:
    """The defaults of `device`'s kind and class, against which an efficiency is "still the table's"."""
    try:
        return table_efficiency(device)
    except CatalogError:
        return None


def widened(device: DeviceSpec, key: str, fraction: Range, notes: list[str]) -> Range:
    """The efficiency range for a derived peak: widened by the architecture table's derivation range."""
    method = device.derived_peaks.get(key)
    if method is None or device.derived_range is None:
        return fraction
    low, high = device.derived_range
    notes.append(f"{device.id}: {key.replace('.', ' ')} peak {method}; efficiency range widened "
                 f"x{low:g} (low) / x{high:g} (high) for a derived peak")
    return Range(fraction.low * low, fraction.typical, fraction.high * high)


GROUPED_OP = "grouped_linear"
"""The ledger's op name of a mixture-of-experts layer's expert products (ingest/transformer_ops.py)."""


@dataclass(frozen=True, slots=True)
class OpClasses:
    """Per op of a ledger: matrix and vector FLOPs, bytes through memory, launches, and the index of
    its tensor class ((kind, dtype), -1 for none) and vector class (dtype)."""

    tensor_flops: list[float]
    vector_flops: list[float]
    bytes: list[float]
    launches: list[float]
    tensor_class: list[int]
    tensor_classes: list[tuple[str, str]]
    vector_class: list[int]
    vector_classes: list[str]
    grouped: list[bool]
    """Per op, whether it is a mixture-of-experts grouped GEMM (priced at the GROUPED kind's fractions)."""
    grouped_weights: list[float] = field(default_factory=list)
    """Per op, the bytes a grouped GEMM streams at the engine's MoE kernel's own share of the bandwidth: its expert
    weights (`OpRecord.weight_bytes`; all its bytes where the ledger states none); its tokens' rows, and every other
    op, move at the device's memory efficiency. Empty: none."""
    attention_cache: list[float] = field(default_factory=list)
    """Per op, the KV-cache bytes a decode step's attention streams at the decode attention kernel's own share of the
    bandwidth (`OpRecord.weight_bytes` of an attention op); 0 for other ops. Empty: none."""

    @classmethod
    def of(cls, ledger: Ledger) -> OpClasses:
        tensor_flops, vector_flops, nbytes, launches, t_cls, v_cls, grouped = [], [], [], [], [], [], []
        weights: list[float] = []
        cache: list[float] = []
        t_index: dict[tuple[str, str], int] = {}
        v_index: dict[str, int] = {}
        for o in ledger.ops:
            tensor_flops.append(float(o.matmul_flops * o.count))
            vector_flops.append(float((o.flops - o.matmul_flops) * o.count))
            # collectives move bytes over links, priced by price.comm, not through device memory
            nbytes.append(0.0 if o.kind == OpKind.COMM else float((o.bytes_read + o.bytes_written) * o.count))
            moves = o.flops or o.bytes_read or o.bytes_written
            launches.append(float(o.count) if (o.kind != OpKind.VIEW and moves) else 0.0)
            grouped.append(o.op == GROUPED_OP)
            weights.append(float((o.weight_bytes or o.bytes_read + o.bytes_written) * o.count) if grouped[-1] else 0.0)
            cache.append(float(o.weight_bytes * o.count) if o.kind == OpKind.ATTENTION else 0.0)
            if o.matmul_flops:
                kind = GROUPED if grouped[-1] else o.kind.value if o.kind.value in TENSOR_KINDS else "matmul"
                t_cls.append(t_index.setdefault((kind, o.dtype), len(t_index)))
            else:
                t_cls.append(-1)
            v_cls.append(v_index.setdefault(o.dtype, len(v_index)))
        return cls(tensor_flops, vector_flops, nbytes, launches, t_cls, list(t_index), v_cls, list(v_index), grouped,
                   weights, cache)


def op_classes(ledger: Ledger) -> OpClasses:
    """`OpClasses.of(ledger)`, kept for the last ledgers priced (a plan prices each cached step ledger on many
    devices and engines; sizeup/memo.py: by the ledger's identity and its ops, `Ledger.version`). A traced model's
    ledger is not kept."""
    return _CLASSES.cached((ledger,), ledger.version(), lambda: OpClasses.of(ledger),
                           keep=len(ledger.ops) <= 4096)


_CLASSES = IdentityMemo(512)


@dataclass(frozen=True, slots=True)
class InverseRates:
    """Seconds per FLOP (per byte, per launch) at each efficiency level. Rows of `tensor`, `vector` and
    `bandwidth` run high, typical, low efficiency (so row 0 gives the low time); each tensor and vector
    row has one extra last entry, 0, for ops with no matrix part or no known peak. `per_launch` runs
    low, typical, high."""

    tensor: list[list[float]]
    vector: list[list[float]]
    bandwidth: list[float]
    per_launch: list[float]
    notes: list[str]
    unknown: list[str]
    grouped_bandwidth: list[float] | None = None
    """Seconds per byte of a grouped GEMM's expert weights (OpClasses.grouped_weights) where the engine's MoE kernel
    streams them at its own share of the bandwidth (Efficiency.grouped_memory); None: `bandwidth`."""
    attention_bandwidth: list[float] | None = None
    """Seconds per byte of a decode step's KV-cache read (OpClasses.attention_cache) at the decode attention kernel's
    share of the bandwidth (Efficiency.attention_memory, never above `memory`); None: `bandwidth`."""


def inverse_rates(device: DeviceSpec, eff: Efficiency, classes: OpClasses) -> InverseRates:
    notes: list[str] = []
    unknown: list[str] = []
    sustained = sustained_factor(device)
    if sustained < 1.0:
        rated = device.rated_clock_hz or device.boost_clock_hz
        named = "rated" if device.rated_clock_hz else "boost"
        notes.append(f"{device.id}: compute at its sustained clock, {device.sustained_clock_hz / 1e6:.0f} of "
                     f"{rated / 1e6:.0f} MHz {named} (board power limit; its data file gives the source)")
    inv_tensor = [[0.0] * (len(classes.tensor_classes) + 1) for _ in LEVELS]
    for c, (kind, dtype) in enumerate(classes.tensor_classes):
        found = tensor_precision(device, kind, dtype)
        if found is None:
            if any(f for f, k in zip(classes.tensor_flops, classes.tensor_class) if k == c):
                unknown.append(f"{dtype} {kind}")
                notes.append(f"{device.id}: compute unknown: no {dtype} {kind} peak is published or derivable "
                             f"(no architecture, compute units or clock in its data file)")
            continue
        unit, precision, peak = found
        if dtype == "fp32" and unit == "vector":
            reason = ("PyTorch keeps TF32 off for matmuls by default" if kind != "conv"
                      else f"{device.id} lists no TF32 figure")
            notes.append(f"fp32 {kind} priced at the vector fp32 peak: {reason}")
        elif dtype == "fp32" and precision == "tf32":
            notes.append(f"fp32 {kind} priced at the TF32 tensor peak: cuDNN allows TF32 for convolutions by default")
        elif dtype == "fp4" and precision != dtype:
            notes.append(f"fp4 {kind} run weight-only: {device.id} has no FP4 tensor units (FP4 math is Blackwell's), "
                         f"so the FP4 weights are unpacked to 16 bits in the kernel and multiplied at the {unit} "
                         f"{precision} peak; the memory read stays 4-bit")
        elif precision != dtype:
            notes.append(f"{dtype} {kind} priced at the {unit} {precision} peak: {device.id} lists no {dtype} figure")
        fraction = eff.vector
        if unit == "vector" and precision == "fp32":  # SGEMM / FP32 SIMT convolution: the class fraction
            simt = simt_fraction(device, eff, kind)
            if simt is not None:
                fraction = simt
                notes.append(f"fp32 {kind} on {device.id}'s FP32 cores at the {kind}@{simt_class(device)} efficiency "
                             f"({device.architecture}: FP32 lanes {'shared with INT32' if simt_class(device) == 'simt-shared' else 'dedicated'})")
        if kind == GROUPED and not has_grouped(eff):
            kind = "matmul"  # no MoE kernel of the engine's own: the experts' products are priced as matmuls
        if unit == "tensor":
            # only where the kind's fraction is still the table's (an engine kernel or a calibration sets its own)
            half = (half_rate_accumulate(device, precision) and eff.tensor.get(kind) == getattr(_table(device), "tensor", {}).get(kind)
                    and eff.tensor.get(f"{kind}@{HALF_RATE}"))
            fraction = half or tensor_fraction(eff, kind, precision)
            if half:
                notes.append(f"{dtype} {kind} on {device.id}: its FP32-accumulate tensor rate is half the FP16-accumulate "
                             f"one, so kernels reach a larger share of it ({kind}@{HALF_RATE} efficiency)")
        fraction = widened(device, f"{unit}.{precision}", fraction, notes)
        for row, level in enumerate(reversed(LEVELS)):  # the low time comes from the high efficiency
            inv_tensor[row][c] = 1.0 / (peak * sustained * getattr(fraction, level))
    inv_vector = [[0.0] * (len(classes.vector_classes) + 1) for _ in LEVELS]
    for c, dtype in enumerate(classes.vector_classes):
        found = vector_precision(device, dtype)
        if found is None:
            if any(f for f, k in zip(classes.vector_flops, classes.vector_class) if k == c):
                unknown.append(f"{dtype} vector")
                notes.append(f"{device.id}: compute unknown: no vector peak is published or derivable for "
                             f"elementwise {dtype} work")
            continue
        fraction = widened(device, f"vector.{found[0]}", eff.vector, notes)
        for row, level in enumerate(reversed(LEVELS)):
            inv_vector[row][c] = 1.0 / (found[1] * sustained * getattr(fraction, level))
    bandwidth = [1.0 / (device.memory_bandwidth_bytes_per_s * getattr(eff.memory, level)) for level in reversed(LEVELS)]
    grouped = None
    if eff.grouped_memory is not None and any(classes.grouped):
        grouped = [1.0 / (device.memory_bandwidth_bytes_per_s * getattr(eff.grouped_memory, level))
                   for level in reversed(LEVELS)]
    attention = None
    if eff.attention_memory is not None and any(classes.attention_cache):
        attention = [1.0 / (device.memory_bandwidth_bytes_per_s * min(getattr(eff.attention_memory, level),
                                                                      getattr(eff.memory, level)))
                     for level in reversed(LEVELS)]
    per_launch = [getattr(eff.overhead_s, level) for level in LEVELS]
    return InverseRates(inv_tensor, inv_vector, bandwidth, per_launch, notes, unknown, grouped, attention)


@dataclass(frozen=True, slots=True)
class PhaseTotals:
    """What an estimate needs from pricing a ledger: the total time range, the typical time split by
    the bound of each op, the notes and what compute is unknown."""

    total_s: Range
    by_bound_s: dict[str, float]
    notes: list[str]
    unknown_compute: tuple[str, ...]


def price_totals(ledger: Ledger, device: DeviceSpec, efficiency: Efficiency | None = None) -> PhaseTotals:
    """`price.roofline.price(...)`'s totals, computed op by op without numpy. Not for a calibrated
    efficiency with a small-GEMM size curve (the vectorised path interpolates it)."""
    eff = efficiency or device_efficiency(device)
    if eff.size_curve:
        raise ValueError("price_totals does not apply a size curve: use price.roofline.price")
    classes = op_classes(ledger)
    rates = inverse_rates(device, eff, classes)
    synchronous = device.kind in SYNCHRONOUS_KINDS
    totals = [0.0, 0.0, 0.0]
    split = {"compute": 0.0, "memory": 0.0, "overhead": 0.0}
    for i in range(len(ledger.ops)):
        tc, vc = classes.tensor_class[i], classes.vector_class[i]
        launches = classes.launches[i]
        for row in range(3):
            compute = rates.tensor[row][tc] * classes.tensor_flops[i] + rates.vector[row][vc] * classes.vector_flops[i]
            memory = classes.bytes[i] * rates.bandwidth[row]
            if rates.grouped_bandwidth and classes.grouped[i]:  # the experts' weights at the MoE kernel's share
                streamed = min(classes.grouped_weights[i], classes.bytes[i])
                memory += streamed * (rates.grouped_bandwidth[row] - rates.bandwidth[row])
            if rates.attention_bandwidth and classes.attention_cache[i]:  # the KV cache at the attention kernel's share
                cached = min(classes.attention_cache[i], classes.bytes[i])
                memory += cached * (rates.attention_bandwidth[row] - rates.bandwidth[row])
            time = max(compute, memory)
            launch = launches * rates.per_launch[row]
            time = time + launch if synchronous else max(time, launch)
            totals[row] += time
            if row == 1:
                overhead = launches * rates.per_launch[1]
                if overhead > max(compute, memory):
                    split["overhead"] += time
                elif compute or memory or overhead:
                    split["compute" if compute >= memory else "memory"] += time
    return PhaseTotals(total_s=Range(*totals), by_bound_s=split, notes=list(dict.fromkeys(rates.notes)),
                       unknown_compute=tuple(dict.fromkeys(rates.unknown)))
