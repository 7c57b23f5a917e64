"""The ledger: the one structure every model description ends in, and everything downstream reads.

A ledger is a list of costed operations (`OpRecord`) plus a table of tensors with lifetimes
(`TensorRecord`). Scopes are dotted module paths ("m.0.cv1.conv"); the root scope is "". Every cost
is added to each enclosing scope when aggregating, so "m.0" includes "m.0.cv1" and "m.0.cv2".
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from enum import Enum

from sizeup.units import nbytes, normalize_dtype

__all__ = [
    "Phase",
    "OpKind",
    "TensorCategory",
    "TensorSpec",
    "OpRecord",
    "TensorRecord",
    "CostTotals",
    "MemoryPeak",
    "Ledger",
    "enclosing_scopes",
    "scope_depth",
]


class Phase(str, Enum):
    FORWARD = "forward"
    BACKWARD = "backward"
    OPTIMIZER = "optimizer"


class OpKind(str, Enum):
    MATMUL = "matmul"
    CONV = "conv"
    ATTENTION = "attention"
    NORM = "norm"
    ELEMENTWISE = "elementwise"
    REDUCE = "reduce"
    EMBED = "embed"
    POOL = "pool"
    COPY = "copy"
    VIEW = "view"
    COMM = "comm"
    OTHER = "other"


class TensorCategory(str, Enum):
    PARAMETER = "parameter"
    BUFFER = "buffer"
    INPUT = "input"
    GRADIENT = "gradient"
    OPTIMIZER_STATE = "optimizer_state"
    ACTIVATION = "activation"
    KV_CACHE = "kv_cache"
    TEMPORARY = "temporary"


@dataclass(frozen=True, slots=True, kw_only=True)
class TensorSpec:
    """Shape and dtype of a tensor; no data."""

    shape: tuple[int, ...]
    dtype: str = "fp32"

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        object.__setattr__(self, "dtype", normalize_dtype(self.dtype))
        if any(d < 0 for d in self.shape):
            raise ValueError(f"negative dimension in shape {self.shape}")

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return nbytes(self.numel, self.dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)


@dataclass(frozen=True, slots=True, kw_only=True)
class OpRecord:
    """One executed (or analytically implied) operation and its cost."""

    op: str
    """Registry key: "aten.mm", "onnx.Conv", analytic "attention"."""
    kind: OpKind
    scope: str
    """Dotted module path; "" is the root."""
    phase: Phase = Phase.FORWARD
    flops: int = 0
    """Floating-point operations; a fused multiply-add counts as 2. Per execution."""
    matmul_flops: int = 0
    """The part of `flops` in matrix products (tensor-core work); the rest is vector work."""
    bytes_read: int = 0
    bytes_written: int = 0
    weight_bytes: int = 0
    """The part of `bytes_read` that is the op's stored weights, where its builder states it (a mixture-of-experts
    layer's grouped GEMM: the routed experts' weights, the rest its tokens' rows; a decode step's self-attention:
    the KV cache it streams, priced at the decode attention kernel's share of the bandwidth); 0: not stated."""
    dtype: str = "fp32"
    """Precision the op computes in (decides which peak it is priced at)."""
    count: int = 1
    """How many identical executions this record stands for (e.g. one record for 32 layers)."""
    flops_counted: bool = True
    """False when no formula exists: bytes are still counted, FLOPs are unknown, not zero."""
    notes: tuple[str, ...] = ()
    conv_kernel: tuple[int, ...] = ()
    """A dense convolution's filter size per spatial dimension ((3, 3)); empty for other ops and for
    grouped, dilated, transposed or backward convolutions (no Winograd path: price.conv_algos)."""
    conv_stride: tuple[int, ...] = ()
    """That convolution's stride per spatial dimension; empty where `conv_kernel` is."""

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"op count must be >= 1, got {self.count}")
        if min(self.flops, self.bytes_read, self.bytes_written, self.matmul_flops) < 0:
            raise ValueError(f"negative cost in {self.op}")
        if self.matmul_flops > self.flops:
            raise ValueError(f"matmul_flops exceed flops in {self.op}")
        if not 0 <= self.weight_bytes <= self.bytes_read:
            raise ValueError(f"weight_bytes outside 0..bytes_read in {self.op}")

    @property
    def total_flops(self) -> int:
        return self.flops * self.count

    @property
    def total_bytes(self) -> int:
        return (self.bytes_read + self.bytes_written) * self.count

    def to_dict(self) -> dict:
        return {
            "op": self.op,
            "kind": self.kind.value,
            "scope": self.scope,
            "phase": self.phase.value,
            "flops": self.total_flops,
            "matmul_flops": self.matmul_flops * self.count,
            "bytes_read": self.bytes_read * self.count,
            "bytes_written": self.bytes_written * self.count,
            "dtype": self.dtype,
            "count": self.count,
            "flops_counted": self.flops_counted,
            "notes": list(self.notes),
        }


@dataclass(slots=True)
class LiveBuffer:
    """A buffer being followed while a ledger is built (its last use moves on); it becomes a
    TensorRecord when the ledger is finished. Shared by the torch trace and the ONNX reader."""

    name: str
    category: TensorCategory
    nbytes: int
    first_use: int
    last_use: int
    scope: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TensorRecord:
    """A buffer of memory and the op interval during which it is live.

    `first_use` and `last_use` are indices into the ledger's op list (inclusive); a tensor that
    exists before the first op (a parameter) has first_use 0; one alive at the end has last_use equal
    to the last op index.
    """

    name: str
    category: TensorCategory
    nbytes: int
    first_use: int
    last_use: int
    scope: str = ""

    def __post_init__(self) -> None:
        if self.nbytes < 0:
            raise ValueError(f"negative size for tensor {self.name}")
        if self.last_use < self.first_use:
            raise ValueError(f"tensor {self.name} dies (op {self.last_use}) before it is made (op {self.first_use})")


@dataclass(frozen=True, slots=True, kw_only=True)
class CostTotals:
    flops: int = 0
    matmul_flops: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    params: int = 0
    ops: int = 0
    uncounted_ops: int = 0

    @property
    def bytes_moved(self) -> int:
        return self.bytes_read + self.bytes_written

    @property
    def arithmetic_intensity(self) -> float:
        """FLOPs per byte moved (read + written); 0 when nothing moves."""
        return self.flops / self.bytes_moved if self.bytes_moved else 0.0

    def to_dict(self) -> dict:
        return {
            "flops": self.flops,
            "matmul_flops": self.matmul_flops,
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
            "params": self.params,
            "ops": self.ops,
            "uncounted_ops": self.uncounted_ops,
            "arithmetic_intensity": self.arithmetic_intensity,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryPeak:
    """Peak of live memory over the ledger's ops, with its parts at that moment."""

    peak_bytes: int
    at_op: int
    """Index of the op during which the peak occurs (-1 for an empty ledger)."""
    by_category: dict[str, int]
    """Bytes per `TensorCategory` value live at the peak; sums to `peak_bytes`."""
    phase: str = ""

    def to_dict(self) -> dict:
        return {
            "peak_bytes": self.peak_bytes,
            "at_op": self.at_op,
            "phase": self.phase,
            "by_category": dict(self.by_category),
        }


def enclosing_scopes(scope: str) -> Iterator[str]:
    """"a.b.c" -> "a.b.c", "a.b", "a", "" (the root)."""
    yield scope
    while scope:
        scope = scope.rpartition(".")[0]
        yield scope


@dataclass(slots=True, kw_only=True)
class Ledger:
    """Costed ops and tensor lifetimes of one model or workload."""

    name: str = "model"
    ops: list[OpRecord] = field(default_factory=list)
    tensors: list[TensorRecord] = field(default_factory=list)
    params_by_scope: dict[str, int] = field(default_factory=dict)
    """Parameters owned directly by each scope (not its children)."""
    assumptions: list[str] = field(default_factory=list)

    # ---- building --------------------------------------------------------------------------
    def add(self, record: OpRecord) -> int:
        self.ops.append(record)
        return len(self.ops) - 1

    def extend(self, records: Iterable[OpRecord]) -> None:
        self.ops.extend(records)

    def version(self) -> tuple[OpRecord, ...]:
        """The ops as they are now, a tuple of frozen records: a memo's version of the ledger (sizeup/memo.py). Two
        are equal only where every op is (identical records compare at once), so a ledger changed in any way after
        it was priced (an op added, replaced or removed, the list swapped) is priced again."""
        return tuple(self.ops)

    # ---- totals -----------------------------------------------------------------------------
    @property
    def params(self) -> int:
        return sum(self.params_by_scope.values())

    def totals(self, phase: Phase | None = None) -> CostTotals:
        ops = [o for o in self.ops if phase is None or o.phase == phase]
        return CostTotals(
            flops=sum(o.total_flops for o in ops),
            matmul_flops=sum(o.matmul_flops * o.count for o in ops),
            bytes_read=sum(o.bytes_read * o.count for o in ops),
            bytes_written=sum(o.bytes_written * o.count for o in ops),
            params=self.params,
            ops=sum(o.count for o in ops),
            uncounted_ops=sum(o.count for o in ops if not o.flops_counted),
        )

    def uncounted_ops(self) -> dict[str, int]:
        """Op names with no FLOP formula and how many times each ran."""
        counts: dict[str, int] = defaultdict(int)
        for o in self.ops:
            if not o.flops_counted:
                counts[o.op] += o.count
        return dict(sorted(counts.items()))

    # ---- aggregation ------------------------------------------------------------------------
    def _group(self, key) -> dict[str, CostTotals]:
        acc: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0, 0])
        for o in self.ops:
            for k in key(o):
                row = acc[k]
                row[0] += o.total_flops
                row[1] += o.bytes_read * o.count
                row[2] += o.bytes_written * o.count
                row[3] += o.count
                row[4] += 0 if o.flops_counted else o.count
                row[5] += o.matmul_flops * o.count
        return {
            k: CostTotals(flops=r[0], bytes_read=r[1], bytes_written=r[2], ops=r[3], uncounted_ops=r[4],
                          matmul_flops=r[5])
            for k, r in acc.items()
        }

    def by_scope(self, depth: int | None = None) -> dict[str, CostTotals]:
        """Totals per scope, each op added to every enclosing scope; `depth` keeps scopes with at
        most that many dotted parts (the root has depth 0). Params are included per scope."""
        groups = self._group(lambda o: enclosing_scopes(o.scope))
        params: dict[str, int] = defaultdict(int)
        for scope, n in self.params_by_scope.items():
            for s in enclosing_scopes(scope):
                params[s] += n
        order: dict[str, int] = {}
        for o in self.ops:
            for s in reversed(list(enclosing_scopes(o.scope))):
                order.setdefault(s, len(order))
        for scope in self.params_by_scope:
            for s in reversed(list(enclosing_scopes(scope))):
                order.setdefault(s, len(order))
        out: dict[str, CostTotals] = {}
        for scope in sorted(order, key=order.__getitem__):
            if depth is not None and scope_depth(scope) > depth:
                continue
            g = groups.get(scope, CostTotals())
            out[scope] = CostTotals(
                flops=g.flops, matmul_flops=g.matmul_flops, bytes_read=g.bytes_read, bytes_written=g.bytes_written,
                params=params.get(scope, 0), ops=g.ops, uncounted_ops=g.uncounted_ops,
            )
        return out

    def by_kind(self) -> dict[str, CostTotals]:
        return self._group(lambda o: (o.kind.value,))

    def by_phase(self) -> dict[str, CostTotals]:
        return self._group(lambda o: (o.phase.value,))

    def by_op(self) -> dict[str, CostTotals]:
        return self._group(lambda o: (o.op,))

    # ---- memory -----------------------------------------------------------------------------
    def memory_peak(self, phases: Iterable[Phase] | None = None) -> MemoryPeak:
        """Largest sum of live tensor bytes over the ops (optionally only ops of `phases`).

        Liveness is [first_use, last_use] inclusive: an ideal allocator that frees a buffer right
        after its last reader, with no caching or fragmentation.
        """
        if not self.ops or not self.tensors:
            return MemoryPeak(peak_bytes=0, at_op=-1, by_category={})
        wanted = None if phases is None else {Phase(p) for p in phases}
        n = len(self.ops)
        delta = [0] * (n + 1)
        for t in self.tensors:
            delta[max(0, t.first_use)] += t.nbytes
            delta[min(n, t.last_use + 1)] -= t.nbytes
        live, best, best_at = 0, -1, -1
        for i in range(n):
            live += delta[i]
            if (wanted is None or self.ops[i].phase in wanted) and live > best:
                best, best_at = live, i
        if best_at < 0:
            return MemoryPeak(peak_bytes=0, at_op=-1, by_category={})
        by_category: dict[str, int] = {c.value: 0 for c in TensorCategory}
        for t in self.tensors:
            if t.first_use <= best_at <= t.last_use:
                by_category[t.category.value] += t.nbytes
        by_category = {k: v for k, v in by_category.items() if v}
        return MemoryPeak(peak_bytes=best, at_op=best_at, by_category=by_category,
                          phase=self.ops[best_at].phase.value)

    def memory_by_category(self) -> dict[str, int]:
        """Total bytes ever allocated per category (not a peak)."""
        out: dict[str, int] = defaultdict(int)
        for t in self.tensors:
            out[t.category.value] += t.nbytes
        return dict(out)

    # ---- serialization ----------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The whole ledger as plain JSON values, losslessly: `Ledger.from_dict` rebuilds an equal one.
        Ops keep their per-execution costs and `count` (unlike `OpRecord.to_dict`, which reports totals)."""
        return {
            "name": self.name,
            "ops": [{**{f.name: getattr(o, f.name) for f in fields(o)}, "kind": o.kind.value, "phase": o.phase.value,
                     "notes": list(o.notes), "conv_kernel": list(o.conv_kernel), "conv_stride": list(o.conv_stride)}
                    for o in self.ops],
            "tensors": [{**{f.name: getattr(t, f.name) for f in fields(t)}, "category": t.category.value}
                        for t in self.tensors],
            "params_by_scope": dict(self.params_by_scope),
            "assumptions": list(self.assumptions),
        }

    @classmethod
    def from_dict(cls, data: dict) -> Ledger:
        """The ledger `to_dict` wrote; raises KeyError, TypeError or ValueError on anything else."""
        return cls(
            name=str(data["name"]),
            ops=[OpRecord(**{**o, "kind": OpKind(o["kind"]), "phase": Phase(o["phase"]), "notes": tuple(o["notes"]),
                          "conv_kernel": tuple(o.get("conv_kernel", ())), "conv_stride": tuple(o.get("conv_stride", ()))})
                 for o in data["ops"]],
            tensors=[TensorRecord(**{**t, "category": TensorCategory(t["category"])}) for t in data["tensors"]],
            params_by_scope={str(k): int(v) for k, v in data["params_by_scope"].items()},
            assumptions=[str(a) for a in data["assumptions"]],
        )

    # ---- transforms -------------------------------------------------------------------------
    def scaled(self, factor: int) -> Ledger:
        """The same ledger with every op's count multiplied (e.g. one layer -> N layers)."""
        from dataclasses import replace

        return Ledger(
            name=self.name,
            ops=[replace(o, count=o.count * factor) for o in self.ops],
            tensors=list(self.tensors),
            params_by_scope=dict(self.params_by_scope),
            assumptions=list(self.assumptions),
        )


def scope_depth(scope: str) -> int:
    return 0 if not scope else scope.count(".") + 1

