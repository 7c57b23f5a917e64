"""Roofline pricing of a ledger on a device.

Per op: compute time = matrix FLOPs / (tensor peak at the op's precision · efficiency of its kind)
+ vector FLOPs / (vector peak · vector efficiency); memory time = bytes / (bandwidth · memory
efficiency). The max() of the two assumes an op overlaps its own compute and memory traffic.
The fixed per-op cost (framework dispatch + kernel launch) overlaps execution on asynchronous
devices (GPU, TPU, NPU, SoC GPU: the host queues the next kernel while this one runs), so there
time = max(compute, memory, overhead); on a CPU the same thread dispatches and computes, so
time = max(compute, memory) + overhead. Every time is a range: the low end uses the high
efficiencies and the low overhead.

The arithmetic is vectorised over the ledger's ops (numpy), so one ledger is priced on the whole
catalog in milliseconds: `LedgerArrays` is built once and reused for every device.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sizeup.hardware.schema import DeviceSpec
from sizeup.ledger import Ledger, OpKind, enclosing_scopes
from sizeup.price.efficiency import TENSOR_KINDS, Efficiency, device_efficiency, tensor_fraction
from sizeup.ranges import Range

__all__ = ["LedgerArrays", "Roofline", "price", "tensor_precision", "vector_precision", "ridge_point"]

LEVELS = ("low", "typical", "high")
SYNCHRONOUS_KINDS = frozenset({"cpu"})
"""Device kinds whose host thread computes the op itself, so dispatch overhead adds to op time."""

# Which peak a tensor op of a given dtype runs at, in order of preference. The first entries are what
# frameworks use by default: fp32 matmuls run without TF32 in PyTorch (allow_tf32 is False for
# matmul), while cuDNN convolutions use TF32 by default (torch.backends.cudnn.allow_tf32 = True).
_TENSOR_CHAIN: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {}
for _kind in TENSOR_KINDS:
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


@dataclass(slots=True)
class LedgerArrays:
    """The ledger's ops as numpy arrays and group indices; built once, priced on many devices."""

    ledger: Ledger
    tensor_flops: np.ndarray
    vector_flops: np.ndarray
    bytes: np.ndarray
    launches: np.ndarray
    tensor_class: np.ndarray
    """Index into `tensor_classes` ((kind, dtype) of the matrix part), -1 when none."""
    tensor_classes: list[tuple[str, str]]
    vector_class: np.ndarray
    vector_classes: list[str]
    groups: dict[str, tuple[list[str], np.ndarray, np.ndarray]] = field(default_factory=dict)

    @classmethod
    def from_ledger(cls, ledger: Ledger) -> LedgerArrays:
        n = len(ledger.ops)
        tensor_flops, vector_flops = np.zeros(n), np.zeros(n)
        nbytes, launches = np.zeros(n), np.zeros(n)
        tensor_class, vector_class = np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=np.int64)
        # -1 (no matrix part) indexes the last column of the inverse-rate table, which is 0
        t_index: dict[tuple[str, str], int] = {}
        v_index: dict[str, int] = {}
        for i, o in enumerate(ledger.ops):
            tensor_flops[i] = o.matmul_flops * o.count
            vector_flops[i] = (o.flops - o.matmul_flops) * o.count
            # collectives move bytes over links, priced by price.comm, not through device memory
            nbytes[i] = 0 if o.kind == OpKind.COMM else (o.bytes_read + o.bytes_written) * o.count
            moves = o.flops or o.bytes_read or o.bytes_written
            launches[i] = o.count if (o.kind != OpKind.VIEW and moves) else 0
            if o.matmul_flops:
                kind = o.kind.value if o.kind.value in TENSOR_KINDS else "matmul"
                tensor_class[i] = t_index.setdefault((kind, o.dtype), len(t_index))
            vector_class[i] = v_index.setdefault(o.dtype, len(v_index))
        return cls(ledger=ledger, tensor_flops=tensor_flops, vector_flops=vector_flops, bytes=nbytes,
                   launches=launches, tensor_class=tensor_class, tensor_classes=list(t_index),
                   vector_class=vector_class, vector_classes=list(v_index))

    def group(self, by: str) -> tuple[list[str], np.ndarray, np.ndarray]:
        """(names, op index, group index) pairs for `by` in scope|kind|phase|op; scopes enclose."""
        if by not in self.groups:
            names: dict[str, int] = {}
            op_idx, grp_idx = [], []
            for i, o in enumerate(self.ledger.ops):
                keys = {"kind": (o.kind.value,), "phase": (o.phase.value,), "op": (o.op,)}.get(by)
                if keys is None:
                    keys = reversed(list(enclosing_scopes(o.scope)))
                for k in keys:
                    op_idx.append(i)
                    grp_idx.append(names.setdefault(k, len(names)))
            self.groups[by] = (list(names), np.asarray(op_idx, dtype=np.int64), np.asarray(grp_idx, dtype=np.int64))
        return self.groups[by]


@dataclass(slots=True)
class Roofline:
    """Times per op on one device at three efficiency levels, and their aggregates."""

    device: DeviceSpec
    arrays: LedgerArrays
    efficiency: Efficiency
    time: dict[str, np.ndarray]
    compute: np.ndarray
    memory: np.ndarray
    overhead: np.ndarray
    notes: list[str]
    unknown_compute: tuple[str, ...] = ()
    """What the device has no peak for (published or derivable) while the ledger has such FLOPs: the
    time is then unknown, not a number (`compute_known` is False)."""

    @property
    def compute_known(self) -> bool:
        return not self.unknown_compute

    @property
    def total_s(self) -> Range:
        return Range(*(float(self.time[level].sum()) for level in LEVELS))

    def bound(self) -> np.ndarray:
        """Per op, at typical efficiency: 'compute', 'memory', 'overhead' or 'free'."""
        out = np.where(self.compute >= self.memory, "compute", "memory").astype(object)
        out[self.overhead > np.maximum(self.compute, self.memory)] = "overhead"
        out[(self.compute == 0) & (self.memory == 0) & (self.overhead == 0)] = "free"
        return out

    def by(self, by: str, depth: int | None = None) -> dict[str, dict[str, Any]]:
        """Per group: time range, share of typical time, and the time split by bound."""
        names, op_idx, grp_idx = self.arrays.group(by)
        k = len(names)
        sums = {level: np.bincount(grp_idx, weights=self.time[level][op_idx], minlength=k) for level in LEVELS}
        bound = self.bound()[op_idx]
        typical = self.time["typical"][op_idx]
        split = {b: np.bincount(grp_idx, weights=np.where(bound == b, typical, 0.0), minlength=k)
                 for b in ("compute", "memory", "overhead")}
        total = float(self.time["typical"].sum()) or 1.0
        out: dict[str, dict[str, Any]] = {}
        for g, name in enumerate(names):
            if by == "scope" and depth is not None and name and name.count(".") + 1 > depth:
                continue
            parts = {b: float(split[b][g]) for b in split}
            main = max(parts, key=parts.get) if any(parts.values()) else "free"
            out[name] = {
                "time_s": Range(float(sums["low"][g]), float(sums["typical"][g]), float(sums["high"][g])),
                "share": float(sums["typical"][g]) / total,
                "bound": main,
                "time_by_bound_s": parts,
            }
        return out

    def to_dict(self, by: str = "scope", depth: int | None = None, ops: bool = False) -> dict[str, Any]:
        totals = self.arrays.ledger.totals()
        rows = [{"name": name, **row, "time_s": row["time_s"].to_dict()} for name, row in self.by(by, depth).items()]
        data = {
            "device": self.device.id,
            "device_name": self.device.name,
            "time_s": self.total_s.to_dict(),
            "flops": totals.flops,
            "bytes": totals.bytes_moved,
            "ridge_points": {p: ridge_point(self.device, p) for p in sorted(self.device.peak_flops_per_s)},
            "by": by,
            "rows": rows,
            "efficiency": {
                "origin": self.efficiency.origin,
                "tensor": {k: v.to_dict() for k, v in self.efficiency.tensor.items()},
                "vector": self.efficiency.vector.to_dict(),
                "memory": self.efficiency.memory.to_dict(),
                "overhead_s": self.efficiency.overhead_s.to_dict(),
            },
            "notes": list(self.notes),
            "compute_known": self.compute_known,
            "unknown_compute": list(self.unknown_compute),
        }
        if not self.compute_known:
            data["time_s"] = None
            data["time_lower_bound_s"] = self.total_s.to_dict()
        if ops:
            bound = self.bound()
            data["ops"] = [
                {"op": o.op, "scope": o.scope, "kind": o.kind.value, "time_s": float(self.time["typical"][i]),
                 "compute_s": float(self.compute[i]), "memory_s": float(self.memory[i]), "bound": bound[i]}
                for i, o in enumerate(self.arrays.ledger.ops) if o.kind != OpKind.VIEW
            ]
        return data


def price(ledger: Ledger | LedgerArrays, device: DeviceSpec, efficiency: Efficiency | None = None) -> Roofline:
    """Price every op of `ledger` on `device`; `efficiency` defaults to the device kind's defaults."""
    arrays = ledger if isinstance(ledger, LedgerArrays) else LedgerArrays.from_ledger(ledger)
    eff = efficiency or device_efficiency(device)
    notes: list[str] = []
    unknown: list[str] = []

    # inverse rates (seconds per FLOP) per class, one row per efficiency level; the extra last
    # column is 0 for ops with no matrix part or no known peak, so they cost no compute time
    inv_tensor = np.zeros((3, len(arrays.tensor_classes) + 1))
    for c, (kind, dtype) in enumerate(arrays.tensor_classes):
        found = tensor_precision(device, kind, dtype)
        if found is None:
            if arrays.tensor_flops[arrays.tensor_class == c].any():
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
        elif precision != dtype:
            notes.append(f"{dtype} {kind} priced at the {unit} {precision} peak: {device.id} lists no {dtype} figure")
        fraction = tensor_fraction(eff, kind, precision) if unit == "tensor" else eff.vector
        fraction = _widened(device, f"{unit}.{precision}", fraction, notes)
        for row, level in enumerate(reversed(LEVELS)):  # the low time comes from the high efficiency
            inv_tensor[row, c] = 1.0 / (peak * getattr(fraction, level))
    inv_vector = np.zeros((3, len(arrays.vector_classes) + 1))
    for c, dtype in enumerate(arrays.vector_classes):
        found = vector_precision(device, dtype)
        if found is None:
            if arrays.vector_flops[arrays.vector_class == c].any():
                unknown.append(f"{dtype} vector")
                notes.append(f"{device.id}: compute unknown: no vector peak is published or derivable for "
                             f"elementwise {dtype} work")
            continue
        fraction = _widened(device, f"vector.{found[0]}", eff.vector, notes)
        for row, level in enumerate(reversed(LEVELS)):
            inv_vector[row, c] = 1.0 / (found[1] * getattr(fraction, level))

    inv_bandwidth = np.array([[1.0 / (device.memory_bandwidth_bytes_per_s * getattr(eff.memory, level))]
                              for level in reversed(LEVELS)])
    per_launch = np.array([[getattr(eff.overhead_s, level)] for level in LEVELS])
    # few, in-place array operations: each 3×n temporary costs page faults at this size
    compute = np.take(inv_tensor, arrays.tensor_class, axis=1)
    compute *= arrays.tensor_flops
    if eff.size_curve:  # small matrix products reach only part of the peak (measured curve)
        sizes, fractions = zip(*eff.size_curve)
        per_op = np.where(arrays.launches > 0, arrays.tensor_flops / np.maximum(arrays.launches, 1), 0.0)
        reach = np.interp(np.log(np.maximum(per_op, 1.0)), np.log(sizes), fractions)
        compute /= np.maximum(reach, 1e-3)
    vector = np.take(inv_vector, arrays.vector_class, axis=1)
    vector *= arrays.vector_flops
    compute += vector
    memory = np.multiply(arrays.bytes, inv_bandwidth, out=vector)
    total = np.maximum(compute, memory)
    overhead = arrays.launches * per_launch[1, 0]
    if device.kind in SYNCHRONOUS_KINDS:
        total += arrays.launches * per_launch
    else:
        np.maximum(total, arrays.launches * per_launch, out=total)
    time = {level: total[row] for row, level in enumerate(LEVELS)}
    parts = {"typical": (compute[1], memory[1], overhead)}
    compute, memory, overhead = parts["typical"]
    return Roofline(device=device, arrays=arrays, efficiency=eff, time=time, compute=compute, memory=memory,
                    overhead=overhead, notes=list(dict.fromkeys(notes)), unknown_compute=tuple(dict.fromkeys(unknown)))


def _widened(device: DeviceSpec, key: str, fraction: Range, notes: list[str]) -> Range:
    """The efficiency range for a derived peak: widened by the architecture table's derivation range."""
    method = device.derived_peaks.get(key)
    if method is None or device.derived_range is None:
        return fraction
    low, high = device.derived_range
    notes.append(f"{device.id}: {key.replace('.', ' ')} peak {method}; efficiency range widened "
                 f"x{low:g} (low) / x{high:g} (high) for a derived peak")
    return Range(fraction.low * low, fraction.typical, fraction.high * high)
