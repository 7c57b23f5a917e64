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

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from sizeup.hardware.schema import DeviceSpec
from sizeup.ledger import Ledger, OpKind, enclosing_scopes
from sizeup.price.cache_residency import dram_equivalent_bytes
from sizeup.price.conv_algos import layout_transform, winograd
from sizeup.price.efficiency import Efficiency, device_efficiency, table_efficiency
from sizeup.price.occupancy import OCCUPANCY_KINDS, conv_tile_outputs, matmul_busy, wave_fraction
from sizeup.engines.runtimes import Runtime
from sizeup.price.overhead import apply_runtime
from sizeup.price.rates import (LEVELS, SYNCHRONOUS_KINDS, inverse_rates, op_classes, ridge_point,
                                tensor_precision, vector_precision)
from sizeup.ranges import Range
from sizeup.units import DTYPE_BITS

__all__ = ["LedgerArrays", "Roofline", "price", "tensor_precision", "vector_precision", "ridge_point"]  # the last three: rates

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
    grouped: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    """Per op, whether it is a mixture-of-experts grouped GEMM (rates.OpClasses.grouped)."""
    grouped_weights: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Per op, a grouped GEMM's expert-weight bytes (rates.OpClasses.grouped_weights); 0 for other ops."""
    attention_cache: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Per op, the KV-cache bytes a decode step's attention streams (rates.OpClasses.attention_cache); 0 for others."""
    conv_outputs: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Output elements of one execution of each convolution (0 for other ops): its GEMM's M·N."""
    groups: dict[str, tuple[list[str], np.ndarray, np.ndarray]] = field(default_factory=dict)
    serial_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Per op, bytes moved by extra kernels that run before or after it (an inductor epilogue, cuDNN's
    layout transform): memory-bound time added to the op's, not overlapped with it. Empty: none."""

    @classmethod
    def from_ledger(cls, ledger: Ledger) -> LedgerArrays:
        c = op_classes(ledger)
        # -1 (no matrix part) indexes the last column of the inverse-rate table, which is 0
        return cls(ledger=ledger, tensor_flops=np.asarray(c.tensor_flops, dtype=float),
                   vector_flops=np.asarray(c.vector_flops, dtype=float), bytes=np.asarray(c.bytes, dtype=float),
                   launches=np.asarray(c.launches, dtype=float),
                   tensor_class=np.asarray(c.tensor_class, dtype=np.int64), tensor_classes=c.tensor_classes,
                   vector_class=np.asarray(c.vector_class, dtype=np.int64), vector_classes=c.vector_classes,
                   grouped=np.asarray(c.grouped, dtype=bool),
                   grouped_weights=np.asarray(c.grouped_weights, dtype=float),
                   attention_cache=np.asarray(c.attention_cache, dtype=float), conv_outputs=np.asarray([o.bytes_written * 8 / DTYPE_BITS.get(o.dtype, 32)
                                            if o.kind == OpKind.CONV and o.matmul_flops else 0.0
                                            for o in ledger.ops], dtype=float))

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
    fixed_s: Range = Range(0.0, 0.0, 0.0)
    """Time per forward outside any op: one graph launch where the runtime replays a captured graph."""
    runtime: str | None = None
    unknown_compute: tuple[str, ...] = ()
    """What the device has no peak for (published or derivable) while the ledger has such FLOPs: the
    time is then unknown, not a number (`compute_known` is False)."""

    @property
    def compute_known(self) -> bool:
        return not self.unknown_compute

    @property
    def total_s(self) -> Range:
        return Range(*(float(self.time[level].sum()) for level in LEVELS)) + self.fixed_s

    @property
    def overhead_bound_s(self) -> float:
        """Typical time of the ops the runtime's per-op overhead bounds (the third bound's share)."""
        return float(self.time["typical"][self.bound() == "overhead"].sum())

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
            "runtime": self.runtime,
            "fixed_s": self.fixed_s.to_dict(),
            "overhead_bound_s": self.overhead_bound_s,
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
                 "compute_s": float(self.compute[i]), "memory_s": float(self.memory[i]),
                 "overhead_s": float(self.overhead[i]), "bound": bound[i]}
                for i, o in enumerate(self.arrays.ledger.ops) if o.kind != OpKind.VIEW
            ]
        return data


def _occupancy(arrays: LedgerArrays, device: DeviceSpec) -> tuple[np.ndarray, float]:
    """Per level and op, the fraction of the SMs a convolution keeps busy (1 for other ops and where the
    architecture has no tile figure), with the tile of the unit it runs on; and the lowest typical one."""
    units = [(tensor_precision(device, kind, dtype) or ("vector",))[0] for kind, dtype in arrays.tensor_classes]
    op_unit = [units[c] if c >= 0 else "vector" for c in arrays.tensor_class]
    busy = np.ones((len(LEVELS), len(op_unit)))
    for unit in ("tensor", "vector"):
        found = conv_tile_outputs(device.architecture, unit)
        mine = np.asarray([u == unit for u in op_unit], dtype=bool) & (arrays.conv_outputs > 0)
        if found is None or not mine.any():
            continue
        tile = found[0]
        fractions = np.stack([wave_fraction(arrays.conv_outputs[mine], device.compute_units, t)
                              for t in (tile.low, tile.typical, tile.high)])
        # a smaller tile can fill a wave worse: the fast end takes the best of the range, the slow the worst
        busy[0, mine], busy[1, mine], busy[2, mine] = fractions.max(axis=0), fractions[1], fractions.min(axis=0)
    return busy, float(busy[1].min())


def _winograd(arrays: LedgerArrays, device: DeviceSpec, rates) -> tuple[LedgerArrays, str | None]:
    units = [(tensor_precision(device, kind, dtype) or ("vector",))[0] for kind, dtype in arrays.tensor_classes]
    if "vector" not in units or not arrays.conv_outputs.any():
        return arrays, None
    flops, moved, kernels, chosen = winograd(arrays, device, rates, units)
    if not chosen:
        return arrays, None
    serial = (arrays.serial_bytes if arrays.serial_bytes.size else np.zeros(len(moved))) + moved
    note = (f"{chosen} FP32 3x3 stride-1 convolutions on {device.id}'s FP32 cores priced as cuDNN's fastest "
            f"algorithm, a Winograd form (fewer multiplies, transforms' traffic counted; price/conv_algos.py)")
    return replace(arrays, tensor_flops=flops, serial_bytes=serial, launches=arrays.launches + kernels, groups={}), note


def price(ledger: Ledger | LedgerArrays, device: DeviceSpec, efficiency: Efficiency | None = None,
          runtime: Runtime | None = None) -> Roofline:
    """Price every op of `ledger` on `device`; `efficiency` defaults to the device kind's defaults (or
    the calibration in force). `runtime` (price.overhead) sets the kernels that run and the host time
    per kernel; a calibrated per-op overhead, measured on the user's machine, is kept over it."""
    arrays = ledger if isinstance(ledger, LedgerArrays) else LedgerArrays.from_ledger(ledger)
    eff = efficiency or device_efficiency(device)
    fixed = Range(0.0, 0.0, 0.0)
    notes: list[str] = []
    if runtime is not None:
        measured = efficiency is None and eff is not table_efficiency(device)
        arrays, tabled, fixed = apply_runtime(arrays, eff, runtime, device.kind in SYNCHRONOUS_KINDS)
        eff = eff if measured else tabled
    if runtime is not None and runtime.conv_layout == "nchw":  # cuDNN transposes NCHW inputs (price.conv_algos)
        units = [(tensor_precision(device, kind, dtype) or ("vector",))[0] for kind, dtype in arrays.tensor_classes]
        moved, kernels = layout_transform(arrays, runtime, units)
        if kernels.any():
            serial = arrays.serial_bytes if arrays.serial_bytes.size else np.zeros(len(moved))
            arrays = replace(arrays, serial_bytes=serial + moved, launches=arrays.launches + kernels, groups={})
            notes.append(f"{runtime.id} hands cuDNN NCHW tensors: each tensor-core convolution first transposes its "
                         f"input to NHWC (one more kernel, its input read and written once more; price/conv_algos.py)")
    rates = inverse_rates(device, eff, arrays)  # the arrays carry the same per-op fields as OpClasses
    notes, unknown = notes + rates.notes, rates.unknown
    arrays, wino_note = _winograd(arrays, device, rates)  # FP32 SIMT 3x3 convolutions (price.conv_algos)
    notes += [wino_note] if wino_note else []
    inv_tensor = np.array(rates.tensor)
    inv_vector = np.array(rates.vector)
    inv_bandwidth = np.array([[r] for r in rates.bandwidth])
    per_launch = np.array([[r] for r in rates.per_launch])
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
    moved, l2_note = dram_equivalent_bytes(arrays, device, runtime)  # reads served from L2 (price.cache_residency)
    memory = np.multiply(moved, inv_bandwidth, out=vector)
    if rates.grouped_bandwidth is not None:  # an engine's MoE kernel streams the expert weights at its own share,
        streamed = np.minimum(arrays.grouped_weights, moved)  # their tokens' rows move as any op's do
        memory += streamed * (np.array([[r] for r in rates.grouped_bandwidth]) - inv_bandwidth)
    if rates.attention_bandwidth is not None:  # a decode step's KV-cache read at the attention kernel's share
        cached = np.minimum(arrays.attention_cache, moved)
        memory += cached * (np.array([[r] for r in rates.attention_bandwidth]) - inv_bandwidth)
    notes += [l2_note] if l2_note else []
    if device.kind in OCCUPANCY_KINDS and device.compute_units and arrays.conv_outputs.any():
        busy, lowest = _occupancy(arrays, device)  # too few output tiles leave SMs idle (price.occupancy)
        compute /= busy
        memory /= busy
        if lowest < 0.5:
            notes.append(f"{device.id}: convolutions with fewer output tiles than its {device.compute_units} "
                         f"SMs run on part of the chip (down to {lowest:.0%}); price/occupancy.py")
    mm_busy, mm_note = matmul_busy(arrays.ledger, device, runtime)  # small GEMMs (price.occupancy)
    if mm_busy is not None:
        compute /= mm_busy
        memory /= mm_busy
        notes += [mm_note] if mm_note else []
    total = np.maximum(compute, memory)
    if arrays.serial_bytes.any():  # kernels of their own before/after the op: their traffic adds
        serial = arrays.serial_bytes * inv_bandwidth
        total += serial
        memory += serial
    overhead = arrays.launches * per_launch[1, 0]
    if device.kind in SYNCHRONOUS_KINDS:
        total += arrays.launches * per_launch
    else:
        np.maximum(total, arrays.launches * per_launch, out=total)
    time = {level: total[row] for row, level in enumerate(LEVELS)}
    parts = {"typical": (compute[1], memory[1], overhead)}
    compute, memory, overhead = parts["typical"]
    return Roofline(device=device, arrays=arrays, efficiency=eff, time=time, compute=compute, memory=memory,
                    overhead=overhead, fixed_s=fixed, runtime=runtime.id if runtime else None, notes=list(dict.fromkeys(notes)), unknown_compute=tuple(dict.fromkeys(unknown)))
