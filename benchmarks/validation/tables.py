"""The data-file figures fitted (or hand-set) on TUNED validation rows, each with the rule it was set by, so that
leave-one-source-out (loso.py) can set it again without one source and say what it falls back to when no row is left.

A fitted figure (`Fitted`) is one value of a data file: which rows it was set from, how (the rule), and its fallback.
Each row's *implied value* is the figure at which the row's own command reproduces the measurement (bisection
through the whole estimate, as `validate_inference.py --fit` did for the Vulkan fractions); every table here is
refit as the median of its rows' implied values, which is what each file states for its figures:

- data/efficiency/kernels.yaml, llama.cpp: the prefill fractions by architecture ("typical = their median"; one
  tuned row: that row's value), the batch-1 decode bandwidth by memory class (mmvq memory_by_class: "median of
  measured/predicted x the device default", the same thing), DMMV's bytes per SM-clock (the two A100 rows). A
  `default` entry is rebuilt by its own rule: the median of the classes left (cuda-mmq, cuda-cublas-f16), else the
  class it copies; a kernel with no class left is dropped (the device kind's default efficiency, gpu.yaml);
- data/efficiency/overheads.yaml: pytorch-eager's per-op time (two DLE batch-1 rows; pytorch-eager-amp takes the same
  figure) -> without rows, the device kind's generic launch cost (gpu.yaml overhead_s); Volta's convolution tiles
  (one V100 TensorRT row each) -> without a row, no tile (the SMs count as filled);
- data/training/allocator_reserve.yaml: the caching allocator's reserve, (p10, median, p90) of the observations of
  every source but the one left out (workload/training/allocator.py `reserve_range(regime, exclude)`);
- data/engines/NAME.yaml settings fitted on tuned rows (engine_fits.py ENGINE_FITS: MLX, ExLlama, MLC, torch.compile,
  bitsandbytes under hf): the median of the rows' implied values; no row left -> the setting dropped.

Swapping a figure is done in place on the loaded tables (restored afterwards); the runner caches results under a label
of what is swapped."""

from __future__ import annotations

import contextlib
import copy
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from . import engine_fits, runner
from .rows import Row


@dataclass
class Fitted:
    key: str
    """'kernels.yaml llama.cpp/cuda-mmq/ada', 'overheads.yaml runtimes/pytorch-eager/per_op_s', ..."""
    rows: list[Row] = field(default_factory=list)
    committed: float = 0.0
    rule: str = "median of the rows' implied values"
    fallback: str = ""


# ---- the loaded tables (engines/) -----------------------------------------------------------------------------------

def kernels_module():
    from sizeup.engines import kernels

    return kernels


def runtimes_module():
    from sizeup.engines import runtimes

    return runtimes


def _llama_kernels() -> dict:
    return kernels_module()._table()[0]["llama.cpp"]


MEDIAN_DEFAULTS = ("cuda-mmq", "cuda-cublas-f16")
"""Kernels whose `default` is the median of their tuned classes (kernels.yaml says so); every other kernel's
`default` copies its one tuned class."""


def _catalog():
    from sizeup.hardware.catalog import load_catalog

    return load_catalog(include_user=False)


def kernel_key(row: Row) -> str | None:
    """The kernels.yaml figure a TUNED llama.cpp row informs, or None (the row prices a derived `default`, a kernel
    without a fitted figure, or a figure that does not bind for it)."""
    args = runner._parse(row.command)
    if row.verb != "estimate" or args.engine != "llama.cpp" or row.metric not in ("decode_tokens_per_s",
                                                                                  "prefill_tokens_per_s"):
        return None
    km = kernels_module()
    device = _catalog().device(args.device)
    decode = row.metric == "decode_tokens_per_s"
    kernel = km.select_kernel("llama.cpp", args.quant, device, decode, args.batch if decode else args.prompt * args.batch,
                              build_date=args.build_date, backend=args.backend)
    if kernel is None:
        return None
    entry = _llama_kernels()[kernel.name]
    if entry.get("by_architecture"):
        return f"{kernel.name}/{device.architecture}" if device.architecture in entry["by_architecture"] else None
    if not kernel.memory:  # the device default bandwidth
        return None
    cls = km.memory_class(device)
    cap = km._issue_cap(entry, device)
    mem = _llama_kernels()["mmvq"]["memory_by_class"].get(cls)
    if cap is not None and mem is not None and cap[0].typical < float(mem["typical"]):
        return f"{kernel.name}/bytes_per_sm_clock"
    return f"mmvq/memory_by_class/{cls}" if mem is not None else None


def _kernel_path(key: str) -> tuple[dict, str]:
    """(the dict holding the figure, its key) for a kernels.yaml figure key."""
    parts = key.split("/")
    table = _llama_kernels()
    if parts[1] == "bytes_per_sm_clock":
        return table[parts[0]], "bytes_per_sm_clock"
    if parts[1] == "memory_by_class":
        return table[parts[0]]["memory_by_class"], parts[2]
    return table[parts[0]]["by_architecture"], parts[1]


def _scaled(entry: dict, value: float) -> dict:
    """The entry with its typical set to `value`, low and high moved by the same factor."""
    f = value / float(entry["typical"])
    return {**entry, "low": float(entry["low"]) * f, "typical": value, "high": float(entry["high"]) * f}


@contextlib.contextmanager
def kernel_values(values: dict[str, float | None]) -> Iterator[None]:
    """kernels.yaml with each figure of `values` set (None: removed), `default` entries rebuilt by their rule and
    kernels left without a class dropped; restored afterwards."""
    table = _llama_kernels()
    saved = copy.deepcopy(table)
    try:
        touched = set()
        for key, value in values.items():
            holder, name = _kernel_path(key)
            touched.add(key.split("/")[0])
            if value is None:
                holder.pop(name, None)
            else:
                holder[name] = _scaled(holder[name], value)
        for kernel in touched:
            by_arch = (table.get(kernel) or {}).get("by_architecture")
            if by_arch is None:
                continue
            classes = {k: v for k, v in by_arch.items() if k != "default"}
            if not classes:
                del table[kernel]  # no tuned class left: the device kind's default efficiency
                continue
            if kernel in MEDIAN_DEFAULTS:
                typical = statistics.median(float(v["typical"]) for v in classes.values())
            else:
                original = {k: float(v["typical"]) for k, v in saved[kernel]["by_architecture"].items()}
                copied = next((k for k, v in original.items() if k != "default" and v == original["default"]), None)
                typical = float(classes[copied]["typical"]) if copied in classes else \
                    statistics.median(float(v["typical"]) for v in classes.values())
            by_arch["default"] = _scaled(saved[kernel]["by_architecture"]["default"], typical)
        yield
    finally:
        table.clear()
        table.update(saved)


# ---- overheads.yaml -------------------------------------------------------------------------------------------------

VISION_FITS = {
    "dle-v100-fp32-b1": "runtimes/pytorch-eager/per_op_s",
    "dle-t4-fp32-b1": "runtimes/pytorch-eager/per_op_s",
    "skb-v100-trt-fp16-b1": "occupancy/volta/conv:tensor",
    "skb-v100-trt-fp32-b1": "occupancy/volta/conv:vector",
}
"""The TUNED ResNet-50 rows and the overheads.yaml figure each was fitted to (the files' `basis` lines say which).
The fifth tuned row (Embedl's L4 TensorRT) set no figure: it is why Ada has no tile."""
PER_OP_FOLLOWERS = ("pytorch-eager-amp",)
"""Runtimes whose per-op figure is pytorch-eager's (their `basis`: 'the pytorch-eager per-op figure')."""


def _generic_launch() -> object:
    from sizeup.hardware.catalog import builtin_data_dir, read_yaml
    from sizeup.ranges import Range

    entry = read_yaml(builtin_data_dir() / "efficiency" / "gpu.yaml")["overhead_s"]
    return Range(float(entry["low"]), float(entry["typical"]), float(entry["high"]))


@contextlib.contextmanager
def overhead_values(values: dict[str, float | None]) -> Iterator[None]:
    from sizeup.price import occupancy
    from sizeup.ranges import Range

    runtimes = runtimes_module()._runtimes()
    tiles = occupancy._tiles()
    saved_rt, saved_tiles = dict(runtimes), copy.deepcopy(tiles)
    try:
        for key, value in values.items():
            parts = key.split("/")
            if parts[0] == "runtimes":
                old = saved_rt[parts[1]].per_op_s
                new = _generic_launch() if value is None else Range(*(v * value / old.typical for v in
                                                                     (old.low, old.typical, old.high)))
                for rid in (parts[1], *PER_OP_FOLLOWERS):
                    runtimes[rid] = replace(saved_rt[rid], per_op_s=new)
            else:
                arch, unit = parts[1], parts[2]
                if value is None:
                    tiles[arch].pop(unit, None)
                else:
                    old, src = saved_tiles[arch][unit]
                    tiles[arch][unit] = (Range(*(v * value / old.typical for v in (old.low, old.typical, old.high))),
                                         src)
        yield
    finally:
        runtimes.clear()
        runtimes.update(saved_rt)
        tiles.clear()
        tiles.update(saved_tiles)


# ---- allocator_reserve.yaml -----------------------------------------------------------------------------------------

@contextlib.contextmanager
def allocator_without(source: str | None) -> Iterator[None]:
    """The allocator reserve as if `source`'s observations were not in the file."""
    from sizeup.workload.training import allocator

    if source is None or source not in allocator.reserve_sources():
        yield
        return
    original = allocator._observations
    kept = tuple(o for o in original() if o[1] != source)
    allocator._observations = lambda: kept
    try:
        yield
    finally:
        allocator._observations = original


# ---- one interface over the three ----------------------------------------------------------------------------------

def figure_key(row: Row) -> str | None:
    """'kernels.yaml llama.cpp/...' or 'overheads.yaml ...' for a TUNED row that set a figure, else None."""
    if row.role != "tuned":
        return None
    if row.id in VISION_FITS:
        return f"overheads.yaml {VISION_FITS[row.id]}"
    engine = engine_fits.row_figure(row.id)
    if engine is not None:
        return engine
    key = kernel_key(row)
    return None if key is None else f"kernels.yaml llama.cpp/{key}"


@contextlib.contextmanager
def values(values: dict[str, float | None], label: str) -> Iterator[None]:
    """Every figure of `values` (keys from figure_key) swapped in at once; results cached under `label`."""
    kernels = {k.split(" ", 1)[1].removeprefix("llama.cpp/"): v for k, v in values.items()
               if k.startswith("kernels.yaml")}
    overheads = {k.split(" ", 1)[1]: v for k, v in values.items() if k.startswith("overheads.yaml")}
    engines = {k: v for k, v in values.items() if k.startswith(engine_fits.PREFIX)}
    with kernel_values(kernels), overhead_values(overheads), engine_fits.engine_values(engines), runner.state(label):
        yield


def committed(key: str) -> float:
    if key.startswith(engine_fits.PREFIX):
        return engine_fits.committed(key)
    file, path = key.split(" ", 1)
    if file == "kernels.yaml":
        holder, name = _kernel_path(path.removeprefix("llama.cpp/"))
        return float(holder[name]["typical"])
    parts = path.split("/")
    if parts[0] == "runtimes":
        return runtimes_module()._runtimes()[parts[1]].per_op_s.typical
    from sizeup.price import occupancy

    return occupancy._tiles()[parts[1]][parts[2]][0].typical


def fallback_of(key: str) -> str:
    if key.startswith(engine_fits.PREFIX):
        return engine_fits.fallback_of(key)
    if key.startswith("kernels.yaml"):
        path = key.split(" ", 1)[1].removeprefix("llama.cpp/")
        if "/memory_by_class/" in path:
            return "the device kind's default bandwidth fraction (gpu.yaml / soc.yaml)"
        if path.endswith("bytes_per_sm_clock"):
            return "no load-issue cap: the mmvq class fraction"
        kernel = path.split("/")[0]
        return (f"{kernel} `default`: the median of the classes left" if kernel in MEDIAN_DEFAULTS else
                f"{kernel} `default`, itself refit; no class left: the device kind's matmul fraction (gpu.yaml)")
    if "per_op_s" in key:
        return "the device kind's generic launch cost (gpu.yaml overhead_s)"
    return "no tile: the SMs count as filled (no occupancy law)"


def implied(row: Row, key: str, iterations: int = 28) -> float | None:
    """The figure at which the row's command reproduces its measurement (bisection in log space over 1/8 .. 8 x the
    committed value), or None when the figure does not move the row's prediction enough to reach it."""
    base = committed(key)

    def at(value: float) -> float:
        with values({key: value}, f"implied {key}={value!r}"):
            p = runner.predict(row)
        return p.typical if p is not None else float("nan")

    lo, hi = base / 8, base * 8
    f_lo, f_hi = at(lo), at(hi)
    target = row.value
    if not (min(f_lo, f_hi) <= target <= max(f_lo, f_hi)):
        return None
    rising = f_hi > f_lo
    for _ in range(iterations):
        mid = (lo * hi) ** 0.5
        if (at(mid) < target) == rising:
            lo = mid
        else:
            hi = mid
    return (lo * hi) ** 0.5


def fitted_figures(rows: list[Row], progress: Callable[[str], None] | None = None) -> dict[str, Fitted]:
    """Every figure fitted on the TUNED rows of `rows`, with the rows it was set from."""
    out: dict[str, Fitted] = {}
    for row in rows:
        key = figure_key(row)
        if key is None:
            continue
        f = out.setdefault(key, Fitted(key=key, committed=committed(key), fallback=fallback_of(key)))
        f.rows.append(row)
    return out
