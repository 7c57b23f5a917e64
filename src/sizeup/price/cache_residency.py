"""L2 residency: bytes an op reads from what the op before it just wrote, served from the GPU's L2.

A kernel writes its output through the L2; when the next kernel reads that tensor while it is still there
(the live working set, the tensor it reads plus the one it writes, fits in the L2), the read never reaches
DRAM. At batch 1 a vision model's activations are a few MiB and an L4's L2 is 48 MiB, so only the weights
stream from DRAM; at large batch the activations are hundreds of MiB and stream too. The weights of every
op stay DRAM traffic unless the whole model's parameters fit beside the working set (a tiny model replayed
forward after forward): an LLM's never do.

The rule, per op that moves memory under the runtime (a fused op moves none: it is skipped, and the kernel
before it is the producer): the read served from L2 is min(bytes it reads, bytes the previous moving op
wrote), when that producer's output plus its own output fit in `usable_fraction` of the L2
(data/efficiency/cache.yaml); those bytes take the architecture's L2 bandwidth, l2_to_dram times the
device's DRAM bandwidth. The previous op's output stands for every activation read: a residual input written
several ops earlier is not credited, and where the producer wrote more than this op's activation input (a merged
gate/up projection before the down projection) up to the difference of its weight read is credited too; both
errors are bounded by the producer's output, a few MiB where the working set fits.

Where it applies: ledgers priced kernel by kernel through a runtime of overheads.yaml (an inference compiler's
fused graph or an eager framework's op-by-op dispatch), on a GPU whose file gives l2_mib and whose architecture has
a sourced ratio. Engine-level pricing (no runtime: the kernel fractions of kernels.yaml) is left alone: those
fractions are end-to-end measurements that already hold whatever the cache gave, and crediting it again would
count it twice. An eager runtime at batch 1 is bound by its per-op host time, so the rule rarely changes it.
"""

from __future__ import annotations

from functools import lru_cache

from sizeup.errors import CatalogError
from sizeup.hardware.catalog import builtin_data_dir, read_yaml
from sizeup.hardware.schema import DeviceSpec
from sizeup.ledger import TensorCategory
from sizeup.ranges import parse_entry
from sizeup.ranges import Range

__all__ = ["CACHE_KINDS", "l2_to_dram", "usable_fraction", "resident_reads", "dram_equivalent_bytes"]

CACHE_KINDS = frozenset({"gpu", "soc"})
"""Device kinds whose kernels hand tensors to each other through a shared L2 (GPU multiprocessors)."""


@lru_cache(maxsize=1)
def _table() -> tuple[tuple[Range, str], dict[str, tuple[Range, str]]]:
    path = builtin_data_dir() / "efficiency" / "cache.yaml"
    data = read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("l2_to_dram"), dict):
        raise CatalogError(f"{path}: expected a mapping 'l2_to_dram' (architecture -> ratio) and 'usable_fraction'")
    unknown = sorted(set(data) - {"usable_fraction", "l2_to_dram"})
    if unknown:
        raise CatalogError(f"{path}: unknown field '{unknown[0]}'")
    usable = parse_entry(data.get("usable_fraction"), path, "usable_fraction", True)
    ratios = {arch: parse_entry(entry, path, f"l2_to_dram.{arch}", False) for arch, entry in data["l2_to_dram"].items()}
    bad = [a for a, (r, _) in ratios.items() if r.low < 1]
    if bad:
        raise CatalogError(f"{path}: l2_to_dram.{bad[0]} = {ratios[bad[0]][0].low}: expected an L2 at least as fast as DRAM (>= 1)")
    return usable, ratios


def usable_fraction() -> tuple[Range, str]:
    """(share of the L2 a working set may fill and still be found there, its source)."""
    return _table()[0]


def l2_to_dram(architecture: str | None) -> tuple[Range, str] | None:
    """(L2 bandwidth as a multiple of DRAM bandwidth, its source) for `architecture`; None where unsourced."""
    return _table()[1].get(architecture or "")


def resident_reads(ledger, moved, capacity: float) -> tuple[list[float], float]:
    """Per op, bytes (all executions) of its reads served from an L2 of `capacity` usable bytes, given the
    bytes each op moves under the runtime (`moved`, 0 for a fused op); and the largest working set seen."""
    served, largest = [], 0.0
    produced = None  # bytes the previous memory-moving op wrote, per execution
    for o, total in zip(ledger.ops, moved):
        if total <= 0:
            served.append(0.0)
            continue
        hit = 0.0
        if produced is not None:
            working = produced + o.bytes_written
            largest = max(largest, working)
            if working <= capacity:
                hit = min(float(o.bytes_read), produced) * o.count
        served.append(min(hit, float(total)))
        produced = float(o.bytes_written)
    return served, largest


def dram_equivalent_bytes(arrays, device: DeviceSpec, runtime) -> tuple[object, str | None]:
    """Bytes per op to divide by the DRAM bandwidth, one row per level (low, typical, high), with the reads
    served from L2 counted at l2_to_dram times that bandwidth; `arrays.bytes` unchanged (and no note) where
    the rule does not apply (no runtime, no L2 size or ratio for the device, nothing resident)."""
    import numpy as np

    ratio = l2_to_dram(device.architecture)
    if runtime is None or device.kind not in CACHE_KINDS or not device.l2_bytes or ratio is None:
        return arrays.bytes, None
    usable = usable_fraction()[0].typical
    capacity = device.l2_bytes * usable
    served, largest = resident_reads(arrays.ledger, arrays.bytes, capacity)
    hit = np.asarray(served, dtype=float)
    params = sum(t.nbytes for t in arrays.ledger.tensors if t.category == TensorCategory.PARAMETER)
    whole = params > 0 and params + largest <= capacity  # the weights too stay in L2 from forward to forward
    if whole:
        hit = np.asarray(arrays.bytes, dtype=float).copy()
    if not hit.any():
        return arrays.bytes, None
    r = ratio[0]
    rows = [arrays.bytes - hit * (1.0 - 1.0 / k) for k in (r.high, r.typical, r.low)]  # fast end: fastest L2
    share = float(hit.sum()) / max(float(np.sum(arrays.bytes)), 1.0)
    what = "all its bytes (the weights fit too)" if whole else "activations the previous kernel wrote"
    note = (f"{device.id}: {share:.0%} of the bytes are {what}, read from its {device.l2_bytes / 2**20:.0f} MiB L2 at "
            f"{r.typical:.1f}x DRAM bandwidth; price/cache_residency.py")
    return np.stack(rows), note
