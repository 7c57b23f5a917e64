"""Calibration: what this device really does.

1. Micro-benchmarks (`sizeup calibrate --quick`): a GEMM sweep gives the achieved matrix FLOP/s, a
   large copy the achieved memory bandwidth; they become the local device's peaks.
2. A fit over stored runs: for every measured point, the model's traced per-op ledger at that batch
   is priced with candidate efficiencies (matrix products per kind, vector work, memory, per-op
   overhead); the efficiencies that minimise the squared log error of predicted against measured
   time (Nelder-Mead in log space) are saved as a calibration profile.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from sizeup.errors import ConfigError, MeasureError
from sizeup.hardware.schema import DeviceSpec
from sizeup.ledger import Ledger
from sizeup.price.efficiency import TENSOR_KINDS, Efficiency, default_efficiency
from sizeup.price.roofline import LedgerArrays, price
from sizeup.ranges import Range

__all__ = ["fixed_cost_intercept", "overhead_term", "microbenchmarks", "local_device", "profile_efficiency", "fit_efficiency", "nelder_mead", "Profile"]

DEFAULT_PROFILE = "local"


def microbenchmarks(device: str = "cpu", dtype: str = "fp32", budget_s: float = 6.0) -> dict[str, Any]:
    """Achieved GEMM FLOP/s (the best over a size sweep) and copy bandwidth (read + write)."""
    import torch

    from sizeup.ingest.torch_trace import torch_dtype
    from sizeup.measure.harness import TimingPolicy, resolve_device, time_callable

    dev = resolve_device(device)
    t_dtype = torch_dtype(dtype)
    policy = TimingPolicy(warmup=1, min_repetitions=3, max_repetitions=10, point_budget_s=budget_s / 8)
    gemm = []
    for n in (256, 512, 1024, 1536, 2048):
        a = torch.randn(n, n, dtype=t_dtype, device=dev)
        b = torch.randn(n, n, dtype=t_dtype, device=dev)
        samples = time_callable(lambda: a @ b, dev, policy)
        gemm.append({"n": n, "flops_per_s": 2 * n**3 / float(np.median(samples))})
    size = 64 * 2**20 if dev.type == "cpu" else 1024 * 2**20
    src = torch.empty(size // 4, dtype=torch.float32, device=dev)
    dst = torch.empty_like(src)
    samples = time_callable(lambda: dst.copy_(src), dev, policy)
    bandwidth = 2 * size / float(np.median(samples))
    return {"device": str(dev), "dtype": dtype, "gemm": gemm,
            "matmul_flops_per_s": max(g["flops_per_s"] for g in gemm), "copy_bytes_per_s": bandwidth,
            "measured": time.strftime("%Y-%m-%d %H:%M:%S"), "catalog_id": _catalog_id(dev)}


def _catalog_id(dev) -> str | None:
    """The catalog device this benchmark ran on (its CPU model or GPU name), when the catalog has it."""
    from sizeup.errors import SizeupError
    from sizeup.hardware.catalog import load_catalog
    from sizeup.hardware.local import detect_local

    try:
        machine = detect_local(load_catalog())
    except SizeupError:
        return None
    if dev.type == "cpu":
        return machine.cpu_catalog_id
    index = dev.index or 0
    return machine.gpus[index].catalog_id if index < len(machine.gpus) else None


def local_device(bench: dict[str, Any], name: str = "local-cpu") -> DeviceSpec:
    """A device spec whose peaks are this machine's measured ones."""
    import os

    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        memory = 16 * 2**30
    flops = float(bench["matmul_flops_per_s"])
    dtype = bench.get("dtype", "fp32")
    return DeviceSpec(id=name, name=f"this machine ({bench.get('device', 'cpu')})", vendor="local",
                      kind="cpu" if str(bench.get("device", "cpu")).startswith("cpu") else "gpu",
                      aliases=(), memory_bytes=int(memory), memory_bandwidth_bytes_per_s=float(bench["copy_bytes_per_s"]),
                      peak_flops_per_s={dtype: flops}, vector_flops_per_s={"fp32": flops},
                      source=f"sizeup micro-benchmarks, {bench.get('measured', '')}", retrieved=time.strftime("%Y-%m-%d"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    name: str
    device: DeviceSpec
    efficiency: Efficiency
    fitted: bool
    residual_median: float | None
    data: dict[str, Any]

    @property
    def catalog_id(self) -> str | None:
        """The catalog device the profile was measured on, when it was recognised."""
        return self.data["bench"].get("catalog_id")

    def efficiency_on(self, device: DeviceSpec) -> Efficiency:
        """The profile's efficiencies as fractions of `device`'s peaks: unchanged on the measured local
        device; on the catalog entry of the same hardware, rescaled by measured / datasheet peak, so
        that the achieved rates (efficiency × peak) stay the measured ones."""
        if device.id == self.device.id:
            return self.efficiency
        if device.id != self.catalog_id:
            where = f"catalog device {self.catalog_id!r}" if self.catalog_id else "a device not in the catalog"
            raise ConfigError(f"calibration {self.name!r} was measured on {where} ({self.device.name}), "
                              f"not on {device.id!r}: measure that device, or use --device local")
        dtype = self.data["bench"].get("dtype", "fp32")
        peak = device.peak_flops_per_s.get(dtype) or device.vector_flops_per_s.get(dtype)
        if not peak or not device.memory_bandwidth_bytes_per_s:
            raise ConfigError(f"calibration {self.name!r}: {device.id} lists no {dtype} peak or memory bandwidth "
                              "to rescale the measured efficiencies against")
        compute = self.device.peak_flops_per_s[dtype] / peak
        vector = self.device.vector_flops_per_s["fp32"] / (device.vector_flops_per_s.get("fp32") or peak)
        memory = self.device.memory_bandwidth_bytes_per_s / device.memory_bandwidth_bytes_per_s
        e = self.efficiency
        return replace(e, tensor={k: v.scale(compute) for k, v in e.tensor.items()}, vector=e.vector.scale(vector),
                       memory=e.memory.scale(memory),
                       origin=f"{e.origin}; rescaled from the measured peaks to the {device.id} datasheet peaks")


def size_curve(bench: dict[str, Any]) -> tuple[tuple[float, float], ...]:
    """(FLOPs of a GEMM, fraction of the best measured rate) from the micro-benchmark's size sweep."""
    best = float(bench["matmul_flops_per_s"])
    points = sorted((2.0 * g["n"] ** 3, min(float(g["flops_per_s"]) / best, 1.0)) for g in bench.get("gemm", []))
    return tuple(points)


def uncalibrated_efficiency(kind: str, bench: dict[str, Any] | None = None) -> Efficiency:
    """Against measured peaks: GEMMs reach the rate measured for their size, copies the measured
    bandwidth; the per-op overhead is the kind's default."""
    base = default_efficiency(kind)
    one = Range(1.0, 1.0, 1.0)
    return Efficiency(tensor={k: one for k in TENSOR_KINDS}, vector=one, memory=one, overhead_s=base.overhead_s,
                      origin="measured peaks (micro-benchmarks), not yet fitted to models",
                      size_curve=size_curve(bench) if bench else ())


def profile_efficiency(values: dict[str, float], spread: float,
                       curve: tuple[tuple[float, float], ...] = ()) -> Efficiency:
    """Efficiency ranges around fitted values (± the median relative residual)."""

    def rng(v: float) -> Range:
        return Range(v / (1 + spread), v, v * (1 + spread))

    return Efficiency(tensor={k: rng(values[f"tensor_{k}"]) for k in TENSOR_KINDS}, vector=rng(values["vector"]),
                      memory=rng(values["memory"]), overhead_s=rng(values["overhead_s"]),
                      origin="calibration profile fitted to measured runs", size_curve=curve)


def nelder_mead(f: Callable[[np.ndarray], float], x0: np.ndarray, step: float = 0.5, iterations: int = 400,
                tol: float = 1e-7) -> np.ndarray:
    """Minimise `f` from `x0` (a small Nelder-Mead: reflection, expansion, contraction, shrink)."""
    n = len(x0)
    simplex = [x0] + [x0 + step * np.eye(n)[i] for i in range(n)]
    values = [f(x) for x in simplex]
    for _ in range(iterations):
        order = np.argsort(values)
        simplex = [simplex[i] for i in order]
        values = [values[i] for i in order]
        if abs(values[-1] - values[0]) < tol:
            break
        centroid = np.mean(simplex[:-1], axis=0)
        reflected = centroid + (centroid - simplex[-1])
        fr = f(reflected)
        if fr < values[0]:
            expanded = centroid + 2 * (centroid - simplex[-1])
            fe = f(expanded)
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = centroid + 0.5 * (simplex[-1] - centroid)
            fc = f(contracted)
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                best = simplex[0]
                simplex = [best] + [best + 0.5 * (x - best) for x in simplex[1:]]
                values = [values[0]] + [f(x) for x in simplex[1:]]
    return simplex[int(np.argmin(values))]


PRIOR_WEIGHT = 0.01
"""Weight of the pull towards the starting values, in squared log units (a 2× change costs 0.005); the prior is the uncalibrated profile."""
_PARAMS = ("compute", "vector", "overhead_s")
"""Three factors: matrix products (every kind) against the measured GEMM rate, vector math (where
transcendentals cost far more than an FMA) against the same rate, the per-op overhead; memory traffic
stays at the measured copy bandwidth. A free memory factor is degenerate with the vector one (both
scale the same elementwise ops) and made the fit wander."""


def fit_efficiency(device: DeviceSpec, observations: Sequence[tuple[Ledger, float]],
                   curve: tuple[tuple[float, float], ...] = ()) -> tuple[dict[str, float], float]:
    """Fit physical factors to measured times: one compute efficiency for matrix products of every kind
    (relative to the measured GEMM rate, on top of its measured size curve), one for memory bandwidth
    (relative to the measured copy) and the per-op overhead. Few parameters, so that a fit on one model
    carries to another. Returns the efficiencies by profile key and the median relative error of the fit."""
    if len(observations) < 2:
        raise MeasureError(f"calibration needs at least 2 measured points, got {len(observations)}")
    arrays = [(LedgerArrays.from_ledger(ledger), measured) for ledger, measured in observations]
    start = {"compute": 1.0, "vector": 1.0, "overhead_s": default_efficiency(device.kind).overhead_s.typical}
    measured = np.log([m for _, m in arrays])

    def expand(values: dict[str, float]) -> dict[str, float]:
        return {**{f"tensor_{k}": values["compute"] for k in TENSOR_KINDS}, "vector": values["vector"],
                "memory": 1.0, "overhead_s": values["overhead_s"]}

    def predict(values: dict[str, float]) -> np.ndarray:
        eff = profile_efficiency(expand(values), 0.0, curve)
        return np.array([price(arr, device, eff).total_s.typical for arr, _ in arrays])

    def values_of(x: np.ndarray) -> dict[str, float]:
        return {name: float(np.exp(v)) for name, v in zip(_PARAMS, x)}

    prior = np.log([start[p] for p in _PARAMS])

    def loss(x: np.ndarray) -> float:
        values = values_of(x)
        if any(values[p] > 1.5 for p in _PARAMS if p != "overhead_s"):
            return 1e9  # well beyond the measured peak is not physical
        pred = predict(values)
        misfit = float(np.sum((np.log(np.maximum(pred, 1e-12)) - measured) ** 2))
        # a weak pull towards the physical starting values keeps the three factors identifiable: the
        # fixed cost of many small ops can otherwise be blamed on slow vector math or on overhead alike
        return misfit + PRIOR_WEIGHT * float(np.sum((x - prior) ** 2))

    values = values_of(nelder_mead(loss, prior))
    pred = predict(values)
    residual = float(np.median(np.abs(pred / np.exp(measured) - 1)))
    return expand(values), residual


def profile_to_dict(device: DeviceSpec, values: dict[str, float] | None, residual: float | None,
                    bench: dict[str, Any], runs: list[int]) -> dict[str, Any]:
    return {"device": {"name": device.name, "kind": device.kind, "memory_bytes": device.memory_bytes,
                       "memory_bandwidth_bytes_per_s": device.memory_bandwidth_bytes_per_s,
                       "peak_flops_per_s": device.peak_flops_per_s, "vector_flops_per_s": device.vector_flops_per_s},
            "bench": bench, "values": values, "residual_median": residual, "runs": runs}


def load_profile(store, name: str = DEFAULT_PROFILE) -> Profile:
    """The saved calibration `name` as a priced device and efficiencies; a damaged profile is one MeasureError."""
    data = store.calibration(name)["profile"]
    try:
        return _profile_from(data, name)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise MeasureError(f"calibration {name!r} in {store.path} is damaged ({type(e).__name__}: "
                           f"{str(e)[:80]}): save it again with 'sizeup calibrate --name {name}'") from None


def _profile_from(data: dict, name: str) -> Profile:
    bench = data["bench"]
    device = local_device(bench, name=f"calibrated-{name}")
    if bench.get("catalog_id"):  # recognised hardware: its memory, links and type from the catalog, peaks measured
        from sizeup.hardware.catalog import load_catalog

        known = load_catalog().device(bench["catalog_id"])
        device = replace(known, id=device.id, name=f"{known.name}, measured ({bench.get('device', '')})", aliases=(),
                         peak_flops_per_s=device.peak_flops_per_s, vector_flops_per_s=device.vector_flops_per_s,
                         memory_bandwidth_bytes_per_s=device.memory_bandwidth_bytes_per_s,
                         source=device.source, retrieved=device.retrieved)
    values = data.get("values")
    efficiency = profile_efficiency(values, data.get("residual_median") or 0.0, size_curve(bench)) if values else \
        uncalibrated_efficiency(device.kind, bench)
    return Profile(name=name, device=device, efficiency=efficiency, fitted=bool(values),
                   residual_median=data.get("residual_median"), data=data)


def dumps(profile: dict[str, Any]) -> str:
    return json.dumps(profile, default=float)


def relative_error(predicted: float, measured: float) -> float:
    return predicted / measured - 1 if measured and not math.isnan(measured) else math.nan


SMALL_BATCH = 8
"""Batches up to this size feed the measured fixed cost: there the work grows linearly with the batch."""


def fixed_cost_intercept(points: Sequence[tuple[int, float]]) -> float | None:
    """The measured per-forward fixed cost: the intercept at batch 0 of a least-squares line through the
    (batch, latency) points up to SMALL_BATCH — what a forward costs with no work, i.e. the runtime's per-op
    overhead summed over the ops. None with fewer than two distinct small batches."""
    small = [(b, t) for b, t in points if b <= SMALL_BATCH and t > 0]
    if len({b for b, _ in small}) < 2:
        return None
    slope, intercept = np.polyfit([b for b, _ in small], [t for _, t in small], 1)
    return max(float(intercept), 0.0)


def overhead_term(roof) -> dict[str, float]:
    """The priced per-op overhead of one forward: kernels x host time per kernel, and the time of the ops
    it bounds (on a CPU it adds to every op; on a GPU it shows only where it exceeds the op's own time)."""
    from sizeup.price.rates import SYNCHRONOUS_KINDS

    kernels = float(roof.arrays.launches.sum())
    total = float(roof.overhead.sum()) + roof.fixed_s.typical
    additive = roof.device.kind in SYNCHRONOUS_KINDS
    return {"kernels": kernels, "per_kernel_s": roof.efficiency.overhead_s.typical,
            "predicted_s": total if additive else roof.overhead_bound_s + roof.fixed_s.typical}

