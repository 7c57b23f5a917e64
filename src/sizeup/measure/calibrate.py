"""Calibration: what this device really does.

1. Micro-benchmarks (`sizeup calibrate --quick`): a GEMM sweep gives the achieved matrix FLOP/s, a
   large copy the achieved memory bandwidth; they become the local device's peaks.
2. A fit over stored runs (`calibrate_fit.py`): for every measured point, the model's traced per-op
   ledger at that batch; one compute factor and the per-op overhead fitted by weighted least squares to a
   robust statistic of the repetitions (the minimum by default), with the overhead's standard error, are
   saved as a calibration profile.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from sizeup.errors import ConfigError, MeasureError
from sizeup.hardware.schema import DeviceSpec
from sizeup.measure.calibrate_fit import SMALL_BATCH, fit_efficiency, fit_profile, line_fit
from sizeup.price.efficiency import TENSOR_KINDS, Efficiency, table_efficiency
from sizeup.ranges import Range

__all__ = ["fixed_cost_intercept", "overhead_term", "microbenchmarks", "local_device", "profile_efficiency",
           "fit_efficiency", "fit_profile", "Profile"]

DEFAULT_PROFILE = "local"


def microbenchmarks(device: str = "cpu", dtype: str = "fp32", budget_s: float = 6.0) -> dict[str, Any]:
    """Achieved GEMM FLOP/s (the best over a size sweep) and copy bandwidth (read + write)."""
    import torch

    from sizeup.ingest.torch_trace import torch_dtype
    from sizeup.measure.harness import TimingPolicy, records_cpu_time, resolve_device, time_callable

    dev = resolve_device(device)
    t_dtype = torch_dtype(dtype)
    # the fastest repetition: load on a shared machine only slows a GEMM down, and a slow size would bend the
    # size curve that every small matrix product is priced on
    policy = TimingPolicy(warmup=2, min_repetitions=5, max_repetitions=20, point_budget_s=budget_s / 8)
    # one torch thread: each repetition's thread CPU time, which other processes' load does not add to
    use_cpu = records_cpu_time(dev)

    def fastest(fn) -> float:
        cpu: list[float] = []
        samples = time_callable(fn, dev, policy, cpu if use_cpu else None)
        return max(min(cpu), 1e-9) if use_cpu else min(samples)

    gemm = []
    for n in (256, 512, 1024, 1536, 2048):
        a = torch.randn(n, n, dtype=t_dtype, device=dev)
        b = torch.randn(n, n, dtype=t_dtype, device=dev)
        gemm.append({"n": n, "flops_per_s": 2 * n**3 / fastest(lambda: a @ b)})
    size = 64 * 2**20 if dev.type == "cpu" else 1024 * 2**20
    src = torch.empty(size // 4, dtype=torch.float32, device=dev)
    dst = torch.empty_like(src)
    bandwidth = 2 * size / fastest(lambda: dst.copy_(src))
    return {"device": str(dev), "dtype": dtype, "gemm": gemm,
            "matmul_flops_per_s": max(g["flops_per_s"] for g in gemm), "copy_bytes_per_s": bandwidth,
            "statistic": "cpu-min" if use_cpu else "min", "threads": torch.get_num_threads(),
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
    notes: tuple[str, ...] = ()
    """What choosing this profile for an estimate applied, and why (measure.profiles.choose_profile)."""

    @property
    def catalog_id(self) -> str | None:
        """The catalog device the profile was measured on (or fitted against), when it is one."""
        bench = self.data.get("bench") or {}
        return bench.get("catalog_id") or self.data.get("catalog_device")

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
        dtype = (self.data.get("bench") or {}).get("dtype", "fp32")
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


def uncalibrated_efficiency(device: DeviceSpec, bench: dict[str, Any] | None = None) -> Efficiency:
    """Against measured peaks: GEMMs reach the rate measured for their size, copies the measured
    bandwidth; the per-op overhead is the one an estimate prices on `device` (`table_efficiency`: its kind's, or its
    vendor's on a system-on-chip)."""
    base = table_efficiency(device)
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


def profile_to_dict(device: DeviceSpec, values: dict[str, float] | None, residual: float | None,
                    bench: dict[str, Any] | None, runs: list[int], *, fit: dict[str, Any] | None = None,
                    statistic: str | None = None, class_fit: dict[str, Any] | None = None) -> dict[str, Any]:
    """The stored form of a profile; `fit` (Fit.to_dict()) and `statistic` (of the repetitions it was fitted
    to) are absent from profiles saved before they were kept. Without a `bench` (micro-benchmarks of the
    machine), the efficiencies are fractions of the catalog device `device`'s datasheet peaks. `class_fit`: the
    workload class, engine, machines and left-out runs of a class profile (measure.calibrate_runs)."""
    data = {"device": {"name": device.name, "kind": device.kind, "memory_bytes": device.memory_bytes,
                       "memory_bandwidth_bytes_per_s": device.memory_bandwidth_bytes_per_s,
                       "peak_flops_per_s": device.peak_flops_per_s, "vector_flops_per_s": device.vector_flops_per_s},
            "bench": bench, "values": values, "residual_median": residual, "runs": runs}
    if bench is None:
        data["catalog_device"] = device.id
    if fit is not None:
        data["fit"] = fit
    if statistic is not None:
        data["statistic"] = statistic
    if class_fit is not None:
        data["class_fit"] = class_fit
    return data


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
    if bench is None:  # fitted against a catalog device's datasheet peaks (a device type of other machines)
        from sizeup.hardware.catalog import load_catalog

        device = load_catalog().device(data["catalog_device"])
        values = data["values"]
        fitted_curve = (data.get("fit") or {}).get("size_curve")
        curve = tuple((float(a), float(b)) for a, b in fitted_curve) if fitted_curve else ()
        return Profile(name=name, device=device, fitted=bool(values), residual_median=data.get("residual_median"),
                       efficiency=profile_efficiency(values, data.get("residual_median") or 0.0, curve), data=data)
    device = local_device(bench, name=f"calibrated-{name}")
    if bench.get("catalog_id"):  # recognised hardware: its memory, links and type from the catalog, peaks measured
        from sizeup.hardware.catalog import load_catalog

        known = load_catalog().device(bench["catalog_id"])
        device = replace(known, id=device.id, name=f"{known.name}, measured ({bench.get('device', '')})", aliases=(),
                         peak_flops_per_s=device.peak_flops_per_s, vector_flops_per_s=device.vector_flops_per_s,
                         memory_bandwidth_bytes_per_s=device.memory_bandwidth_bytes_per_s,
                         source=device.source, retrieved=device.retrieved)
    values = data.get("values")
    fitted_curve = (data.get("fit") or {}).get("size_curve")  # fitted with a measured floor (calibrate_fit)
    curve = tuple((float(a), float(b)) for a, b in fitted_curve) if fitted_curve else size_curve(bench)
    efficiency = profile_efficiency(values, data.get("residual_median") or 0.0, curve) if values else \
        uncalibrated_efficiency(device, bench)
    return Profile(name=name, device=device, efficiency=efficiency, fitted=bool(values),
                   residual_median=data.get("residual_median"), data=data)


def dumps(profile: dict[str, Any]) -> str:
    return json.dumps(profile, default=float)


def relative_error(predicted: float, measured: float) -> float:
    return predicted / measured - 1 if measured and not math.isnan(measured) else math.nan


def fixed_cost_intercept(points: Sequence[tuple[int, float]]) -> float | None:
    """The measured per-forward fixed cost: the intercept at batch 0 of a least-squares line through the
    (batch, latency) points up to SMALL_BATCH — what a forward costs with no work, i.e. the runtime's per-op
    overhead summed over the ops. None with fewer than two distinct small batches."""
    line = line_fit([(b, t) for b, t in points if b <= SMALL_BATCH and t > 0])
    return None if line is None else max(line[0], 0.0)


PINNED = 0.20
"""The batch-line intercept is pinned when its standard error is at most this fraction of it: the small batches'
points lie close enough to a line for the intercept to mean something."""


def overhead_comparison(points: Sequence[tuple[int, float, float, float]], term: dict[str, float],
                        fit: dict[str, Any] | None, statistic: str,
                        floor: dict[str, Any] | None = None) -> dict[str, Any]:
    """The per-op overhead term predicted against measured. Measured: the run's floor (measure.floor: its forward
    on an empty batch, every op dispatched and none computed), in `statistic` (cpu-min where recorded, else the
    wall minimum) — independent of the fit. Predicted: `term` (kernels x the profile's host time per kernel), with
    the fit's standard error times the kernels.

    Also, from (batch, measured, predicted, priced work without overhead) per point, the batch line's fixed cost:
    the intercept at batch 0 of a line (relative least squares) through the measured small-batch points, less the
    same intercept of the priced work. It is not the per-op overhead (it holds the weights streamed every forward
    and the small batches' slower kernels) and not independent of a fit made on the same points; it is kept
    beside the floor as `intercept_s` to show the difference."""
    from sizeup.measure.floor import floor_pinned, floor_seconds

    small = [p for p in points if p[0] <= SMALL_BATCH]
    measured_line = line_fit([(b, m) for b, m, _, _ in small], relative=True)
    work_line = line_fit([(b, w) for b, _, _, w in small], relative=True)
    predicted_line = line_fit([(b, p) for b, _, p, _ in small], relative=True)
    measured = floor_seconds(floor, statistic)
    out: dict[str, Any] = {**term, "statistic": statistic, "measured_s": measured, "floor": floor,
                           "error": term["predicted_s"] / measured - 1 if measured else None,
                           "pinned": measured is not None and floor_pinned(floor),
                           "source": "floor" if measured else None, "intercept_s": None,
                           "intercept_stderr_s": None, "intercept_error": None, "fixed_cost_measured_s": None,
                           "fixed_cost_predicted_s": None, "fixed_work_s": None, "predicted_stderr_s": None,
                           "overhead_source": (fit or {}).get("overhead_source", "fitted")}
    se = (fit or {}).get("overhead_stderr_s")
    if se is not None:
        out["predicted_stderr_s"] = se * term["kernels"]
    if measured_line is None or work_line is None or predicted_line is None:
        return out
    intercept = measured_line[0] - work_line[0]
    out |= {"fixed_cost_measured_s": measured_line[0], "fixed_cost_predicted_s": predicted_line[0],
            "fixed_work_s": work_line[0], "intercept_s": intercept, "intercept_stderr_s": measured_line[2],
            "intercept_error": term["predicted_s"] / intercept - 1 if intercept > 0 else None}
    return out


def overhead_term(roof) -> dict[str, float]:
    """The priced per-op overhead of one forward: kernels x host time per kernel, and the time of the ops
    it bounds (on a CPU it adds to every op; on a GPU it shows only where it exceeds the op's own time)."""
    from sizeup.price.rates import SYNCHRONOUS_KINDS

    kernels = float(roof.arrays.launches.sum())
    total = float(roof.overhead.sum()) + roof.fixed_s.typical
    additive = roof.device.kind in SYNCHRONOUS_KINDS
    return {"kernels": kernels, "per_kernel_s": roof.efficiency.overhead_s.typical,
            "predicted_s": total if additive else roof.overhead_bound_s + roof.fixed_s.typical}

