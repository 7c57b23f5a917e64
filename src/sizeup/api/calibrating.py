"""`calibrate`: fit this device's efficiencies from micro-benchmarks and the stored runs, and save the profile
that estimate, train, plan and compare price with, as `sizeup calibrate`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sizeup.api.options import Options, option
from sizeup.errors import MeasureError

__all__ = ["CalibrateOptions", "CalibrationResult", "calibrate", "kernels_of", "noisy_points", "run_floor"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CalibrateOptions(Options):
    quick: bool = option(False, "(re)measure the micro-benchmarks: GEMM sweep and copy")
    runs: tuple[int, ...] | None = option(None, "run ids to fit to (default: every finished inference run)",
                                          minimum=1)
    name: str = option("local", "profile name")
    device: str = option("cpu", "the local device: cpu, cuda, cuda:N or mps")
    statistic: Literal["auto", "min", "p10", "median", "cpu-min"] = option(
        "auto", "which statistic of each point's repetitions to fit (auto: cpu-min where every point has CPU times, "
                "else min)")
    threads: int | None = option(None, "torch CPU threads for the micro-benchmarks (set for the whole process)",
                                 minimum=1, maximum=4096)
    db: str | Path | None = option(None, "run database (default: the user data folder)")


@dataclass(frozen=True, slots=True, kw_only=True)
class CalibrationResult:
    """The saved profile: measured peaks (`bench`), and the efficiencies fitted to the runs when there were any."""

    name: str
    bench: dict[str, Any]
    fitted: dict[str, float] | None
    residual_median: float | None
    runs: tuple[int, ...]
    statistic: str | None
    overhead_stderr_s: float | None
    compute_stderr: float | None
    points: int
    """Points the fit used."""
    overhead_source: str | None
    notes: tuple[str, ...]
    noisy_points: tuple[dict[str, Any], ...]
    """Points whose median is well above their minimum: measured on a busy machine."""
    points_held: int = 0
    """Points considered for the fit (the base of `noisy_points`)."""
    profile_fitted: bool = False
    """Whether the saved profile carries fitted efficiencies (else micro-benchmarks only)."""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "bench": self.bench, "fitted": self.fitted, "residual_median": self.residual_median,
                "runs": list(self.runs), "statistic": self.statistic, "overhead_stderr_s": self.overhead_stderr_s,
                "compute_stderr": self.compute_stderr, "points": self.points, "overhead_source": self.overhead_source,
                "notes": list(self.notes), "noisy_points": list(self.noisy_points)}


def calibrate(options: CalibrateOptions | None = None, /, *, progress: Callable[[str], None] | None = None,
              **changes: Any) -> CalibrationResult:
    """Measure (or reuse) the micro-benchmarks, fit the runs, save the profile `name`; `progress` is told when
    the micro-benchmarks start. The keywords are `CalibrateOptions`' fields."""
    from sizeup.api.options import build_options
    from sizeup.measure.calibrate import fit_profile, load_profile, local_device, microbenchmarks, profile_to_dict
    from sizeup.measure.calibrate_fit import NOISY_SPREAD
    from sizeup.measure.store import Store

    o = build_options(CalibrateOptions, options, changes, "calibrate")
    if o.threads:
        import torch

        torch.set_num_threads(o.threads)
    with Store(o.db) as store:
        if o.quick or o.name not in store.calibrations():
            if progress:
                progress("GEMM sweep and copy micro-benchmarks")
            bench = microbenchmarks(o.device)
        else:
            bench = store.calibration(o.name)["profile"]["bench"]
        device = local_device(bench)
        if o.runs:
            run_ids = list(o.runs)
        else:
            run_ids = [r.id for r in store.runs(kind="inference") if r.effective_status in ("ok", "interrupted")]
        fit, held, statistic = None, [], None
        if run_ids and not (o.quick and not o.runs):
            floors: list = []
            observations, held, statistic = _observations(store, run_ids, o.statistic, floors)
            if observations:
                from sizeup.measure.calibrate import size_curve

                fit = fit_profile(device, observations, size_curve(bench), [h[1] for h in held], floors)
        elif not o.quick:
            raise MeasureError("nothing to calibrate on: measure a model first (sizeup measure) or use --quick")
        values = fit.values if fit else None
        residual = fit.residual_median if fit else None
        store.save_calibration(o.name, device=o.device,
                               profile=profile_to_dict(device, values, residual, bench, run_ids if fit else [],
                                                       fit=fit.to_dict() if fit else None,
                                                       statistic=statistic if fit else None),
                               source_runs=run_ids if fit else [])
        profile = load_profile(store, o.name)
    return CalibrationResult(
        name=o.name, bench=bench, fitted=values, residual_median=residual, runs=tuple(run_ids) if fit else (),
        statistic=statistic if fit else None, overhead_stderr_s=fit.overhead_stderr_s if fit else None,
        compute_stderr=fit.compute_stderr if fit else None, points=fit.points if fit else 0,
        overhead_source=fit.overhead_source if fit else None, notes=tuple(fit.notes) if fit else (),
        noisy_points=tuple(noisy_points(held, NOISY_SPREAD)), points_held=len(held), profile_fitted=profile.fitted)


def kernels_of(ledger) -> float:
    """The kernels a forward launches (the roofline's count)."""
    from sizeup.price.roofline import LedgerArrays

    return float(LedgerArrays.from_ledger(ledger).launches.sum())


def run_floor(run) -> dict | None:
    """The run's floor (the forward on an empty batch, measure.floor), kept in its first point's extra."""
    return next((p.extra["floor"] for p in run.points if isinstance(p.extra.get("floor"), dict)), None)


def _observations(store, run_ids, statistic: str = "auto", floors: list | None = None):
    """(traced ledger at the batch, the statistic of its repetitions) for every ok inference point of the
    runs, (run, batch, minimum, median) of each point used, and the statistic used; given `floors` (a list),
    it gets (kernels, floor seconds) of every run that timed its forward on an empty batch."""
    from sizeup.api.flops import report_at
    from sizeup.measure.calibrate_fit import resolve_statistic, stored_statistic
    from sizeup.measure.floor import floor_seconds

    runs = [store.run(run_id) for run_id in run_ids]
    runs = [r for r in runs if r.kind == "inference" and not r.config.get("llm")]
    statistic = resolve_statistic(store, [p for r in runs for p in r.points], statistic)
    observations, held = [], []
    for run in runs:
        run_id, before = run.id, len(observations)
        for point in run.points:
            value = stored_statistic(store, point, statistic) if point.status == "ok" else None
            if not value:
                continue
            ledger = report_at(run.target, run.config, point.batch).ledger
            observations.append((ledger, value))
            held.append((run_id, point.batch, point.latency_min_s, point.latency_p50_s))
        seconds = floor_seconds(run_floor(run), statistic)
        if floors is not None and seconds and len(observations) > before:
            floors.append((kernels_of(observations[-1][0]), seconds))
    return observations, held, statistic


def noisy_points(held, threshold: float) -> list[dict]:
    """The points whose median is more than `threshold` above their minimum: measured on a busy machine."""
    from sizeup.measure.calibrate_fit import spread

    out = []
    for run_id, batch, minimum, median in held:
        s = spread(minimum, median)
        if s is not None and s > threshold:
            out.append({"run_id": run_id, "batch": batch, "spread": s})
    return out
