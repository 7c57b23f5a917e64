"""`compare_run`: a stored run beside its prediction, term by term (time by op kind, memory, the per-op
overhead), or a serving run beside the SLA its plan promised and sizeup's own prediction, as `sizeup compare
RUN_ID`. It only reads the store."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sizeup.errors import ConfigError, MeasureError

__all__ = ["LlmRunComparison", "RunComparison", "compare_run"]

STATISTICS = ("auto", "min", "p10", "median", "cpu-min")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunComparison:
    """A torch or ONNX model run: each point's measured time beside the prediction of the calibration."""

    run_id: int
    target: str
    calibration: str
    calibrated: bool
    calibration_notes: tuple[str, ...]
    """Which fit of the profile priced the prediction, and why (measure.profiles.choose_profile)."""
    statistic: str
    """The statistic of each point's repetitions compared with the prediction (min, p10, median, cpu-min)."""
    noise: dict[str, Any]
    warnings: tuple[str, ...]
    overhead: dict[str, Any] | None
    """The per-op overhead predicted against the measured floor (the forward on an empty batch)."""
    points: tuple[dict[str, Any], ...]
    by_kind: dict[str, dict[str, float]]
    largest_gap_kind: str | None
    """The op kind whose predicted and profiled times differ most (None: the run was not profiled)."""

    @property
    def profiled(self) -> bool:
        return self.largest_gap_kind is not None

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "target": self.target, "calibration": self.calibration,
                "calibrated": self.calibrated, "calibration_notes": list(self.calibration_notes),
                "statistic": self.statistic, "noise": self.noise,
                "warnings": list(self.warnings), "overhead": self.overhead, "points": list(self.points),
                "by_kind": self.by_kind, "largest_gap_kind": self.largest_gap_kind}


@dataclass(frozen=True, slots=True, kw_only=True)
class LlmRunComparison:
    """A preset LLM run: prefill and decode against the analytic ledger priced with the calibration."""

    run_id: int
    target: str
    calibration: str
    calibration_notes: tuple[str, ...]
    points: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "target": self.target, "calibration": self.calibration,
                "calibration_notes": list(self.calibration_notes), "points": list(self.points)}


def compare_run(run_id: int, *, db: str | Path | None = None, calibration: str | None = None,
                statistic: str | None = None, sla: str | Path | None = None):
    """Run `run_id` of the store `db` (a path or a postgresql:// URL) beside its prediction. `calibration`: the
    profile that prices it (default local: its fit of the run's workload class where there is one, else its
    measured peaks); `statistic`: of the repetitions (default: the one the calibration was fitted to, else min);
    `sla`: for a serving run, the SCENARIO.yaml whose SLA it is checked against (default: the one given to
    `sizeup load --sla`). Returns a `RunComparison`, an `LlmRunComparison`, or for a serving run a
    `ServingComparison`."""
    from sizeup.api.run_store import open_reader_of
    from sizeup.measure.calibrate_fit import resolve_statistic, stored_statistic

    if statistic is not None and statistic not in STATISTICS:
        raise ConfigError(f"--statistic {statistic!r}: expected one of {', '.join(STATISTICS)}")
    with open_reader_of(db, f"no run {run_id}: ") as store:
        run = store.run(run_id)
        if run.kind == "load":
            from sizeup.api.serving_compare import compare_serving

            return compare_serving(run, store, calibration=calibration, sla=sla)
        if run.kind not in ("inference", "train"):
            raise MeasureError(f"run {run.id} is a {run.kind} run: nothing was predicted for it "
                               f"(see sizeup runs show {run.id})")
        from sizeup.measure.calibrate_runs import run_workload
        from sizeup.measure.profiles import choose_profile

        profile = choose_profile(store, calibration or "local", run_workload(run), implicit=calibration is None)
        statistic = resolve_statistic(store, run.points, statistic or profile.data.get("statistic") or "auto")
        stats = {p.id: stored_statistic(store, p, statistic) for p in run.points if p.status == "ok"}
        cpu_mins = {p.id: stored_statistic(store, p, "cpu-min") for p in run.points if p.status == "ok"}
    if run.config.get("llm"):
        return _compare_llm(run, profile)
    return _compare_model(run, profile, statistic, stats, cpu_mins)


def _compare_model(run, profile, statistic: str, stats: dict, cpu_mins: dict) -> RunComparison:
    from sizeup.api.flops import report_at
    from sizeup.measure.calibrate_runs import run_floor
    from sizeup.measure.calibrate import overhead_comparison, overhead_term, uncalibrated_efficiency
    from sizeup.measure.calibrate_fit import NOISY_SPREAD, spread
    from sizeup.price.roofline import price

    rows, kinds_total, overhead, small = [], {}, None, []
    no_overhead = _small_batch_work(profile)
    for point in run.points:
        if point.status != "ok" or not point.latency_p50_s:
            continue
        report = report_at(run.target, run.config, point.batch, train=run.kind == "train")
        roof = price(report.ledger, profile.device, profile.efficiency)
        value = stats.get(point.id) or point.latency_min_s or point.latency_p50_s
        if not point.grad_accumulation or point.grad_accumulation == 1:
            work = price(report.ledger, profile.device, no_overhead).total_s.typical
            small.append((point.batch, value, roof.total_s.typical, work))
        raw = price(report.ledger, profile.device, uncalibrated_efficiency(profile.device,
                                                                           profile.data.get("bench")))
        accumulation = point.grad_accumulation or 1
        if overhead is None:  # the smallest batch: where the fixed cost is the largest share
            overhead = {**overhead_term(roof), "batch": point.batch}
        predicted = roof.total_s.typical * accumulation
        by_kind = {k: v["time_s"].typical * accumulation for k, v in roof.by("kind").items()}
        measured_kinds = point.extra.get("measured_by_kind_s") or {}
        for kind in set(by_kind) | set(measured_kinds):
            entry = kinds_total.setdefault(kind, [0.0, 0.0])
            entry[0] += by_kind.get(kind, 0.0)
            entry[1] += measured_kinds.get(kind, 0.0)
        rows.append({"batch": point.batch, "grad_accumulation": point.grad_accumulation,
                     "measured_s": point.latency_p50_s, "measured_min_s": point.latency_min_s,
                     "measured_statistic_s": value, "spread": spread(point.latency_min_s, point.latency_p50_s),
                     "measured_cpu_min_s": cpu_mins.get(point.id),
                     "predicted_s": predicted, "uncalibrated_s": raw.total_s.typical * accumulation,
                     "error": predicted / point.latency_p50_s - 1, "error_vs_statistic": predicted / value - 1,
                     "predicted_memory_bytes": report.memory.peak_bytes,
                     "measured_memory_bytes": point.peak_memory_bytes,
                     "predicted_memory_by_category": report.memory.by_category,
                     "predicted_by_kind_s": by_kind, "measured_by_kind_s": measured_kinds})
    profiled = any(v[1] for v in kinds_total.values())
    moved = max(kinds_total, key=lambda k: abs(kinds_total[k][1] - kinds_total[k][0])) if profiled else None
    if overhead is not None:
        overhead = {**overhead_comparison(small, overhead, profile.data.get("fit"), statistic, run_floor(run)),
                    "batch": overhead["batch"]}
        overhead["method"] = (f"measured: the run's forward on an empty batch (every op dispatched, none computed; "
                              f"its {statistic}); predicted: kernels x the profile's host time per kernel "
                              f"({overhead['overhead_source']}); intercept: the batch line's fixed cost less the "
                              "priced fixed work (not the per-op overhead: it holds the weights read every forward)")
    spreads = [r["spread"] for r in rows if r["spread"] is not None]
    stretch = [spread(r["measured_cpu_min_s"], r["measured_min_s"]) for r in rows if r["measured_cpu_min_s"]]
    stretch = [s for s in stretch if s is not None]
    noise = {"max_spread": max(spreads, default=None), "threshold": NOISY_SPREAD,
             "max_wall_over_cpu": max(stretch, default=None),
             "noisy": bool(spreads) and max(spreads) > NOISY_SPREAD,
             "load_avg_1m": [r for p in run.points for r in [p.extra.get("load_avg_1m")] if r is not None]}
    threads = (profile.data.get("bench", {}).get("threads"), run.environment.get("threads"))
    warnings = (f"the calibration's micro-benchmarks ran on {threads[0]} torch thread(s), this run on {threads[1]}: "
                "its rates may not apply",) if None not in threads and threads[0] != threads[1] else ()
    return RunComparison(run_id=run.id, target=run.target, calibration=profile.name, calibrated=profile.fitted,
                         calibration_notes=tuple(profile.notes), statistic=statistic, noise=noise, warnings=warnings, overhead=overhead, points=tuple(rows),
                         by_kind={k: {"predicted_s": v[0], "measured_s": v[1]} for k, v in kinds_total.items()},
                         largest_gap_kind=moved)


def _small_batch_work(profile):
    """The profile's efficiency with no per-op overhead, at the rate the overhead was fitted with: the small
    batches' own where the fit kept one (measure.calibrate_fit), so the fixed work subtracted from the measured
    intercept is priced as the fit priced it."""
    from sizeup.ranges import Range

    eff = replace(profile.efficiency, overhead_s=Range(0.0, 0.0, 0.0))
    fit = profile.data.get("fit") or {}
    small = fit.get("small_batch_compute")
    values = profile.data.get("values")
    if not small or not values or fit.get("size_curve"):  # a fitted size curve already prices small ops slower
        return eff
    from sizeup.measure.calibrate import profile_efficiency

    factor = {k: small for k in values if k.startswith("tensor_") or k == "vector"}
    return profile_efficiency({**values, **factor, "overhead_s": 0.0}, 0.0, eff.size_curve)


def _compare_llm(run, profile) -> LlmRunComparison:
    from sizeup.ingest.hf_config import load_model
    from sizeup.ingest.transformer_ops import Step, transformer_ledger
    from sizeup.price.roofline import price

    arch = load_model(run.target)
    prompt, context, dtype = run.config["prompt"], run.config["context"], run.config.get("dtype", "fp32")
    rows = []
    for point in run.points:
        if point.status != "ok" or not point.latency_p50_s:
            continue
        step = Step(batch=point.batch, new_tokens=prompt, context=prompt) if point.phase == "prefill" else \
            Step(batch=point.batch, new_tokens=1, context=context)
        ledger = transformer_ledger(arch, step, weights=dtype, act_dtype=dtype, per_layer=False)
        predicted = price(ledger, profile.device, profile.efficiency).total_s.typical
        rows.append({"batch": point.batch, "phase": point.phase, "measured_s": point.latency_p50_s,
                     "predicted_s": predicted, "error": predicted / point.latency_p50_s - 1})
    return LlmRunComparison(run_id=run.id, target=run.target, calibration=profile.name,
                            calibration_notes=tuple(profile.notes), points=tuple(rows))
