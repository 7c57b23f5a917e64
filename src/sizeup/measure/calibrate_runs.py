"""Calibration a team can trust: which stored runs a profile is fitted from, and why the others are not.

`calibrate_store` reads every run in the store (or the runs asked for), from every machine, and sorts them:

1. A run is a candidate only if it timed a workload (inference, training or a load test; not a watch, a
   micro-benchmark or collectives), finished (ok or interrupted, not error), measured the device type being
   calibrated (any host: that is how several machines of one type pool their runs), and can be rebuilt as a
   ledger (a serving run needs its model and device type, `sizeup runs import --model --device-type`).
2. Candidates are grouped by workload class, engine and engine version (measure/profiles.py): each group is
   fitted on its own, and saved as its own profile.
3. Noise: the fit takes a low statistic of each point's repetitions (the minimum by default: load only adds
   time), so a point is trusted when its minimum is reproducible — when its two fastest repetitions (CPU times
   where recorded) lie within NOISY_REJECT of each other. A point whose fastest repetition is alone (the next
   one more than 25% slower: it ran in a lucky gap of a busy machine, or the others were all disturbed), or
   that has fewer than two repetitions, is rejected; a run with more than half its points rejected is rejected
   whole.
4. Outliers: after a first fit, with three runs or more, a run whose median relative residual lies more than
   OUTLIER_Z robust standard deviations (1.4826 x MAD) and more than OUTLIER_MIN from the other runs' is rejected
   (another machine's clocks, a different build); with fewer runs, a point whose residual exceeds 3 times the
   median absolute residual and OUTLIER_MIN. The group is then fitted again.
5. A fit whose compute or memory factor sits on the edge of its search range is not saved at all: the points
   did not pin it, and a profile from it would mis-price everything it touches.

Every run left out carries its reason, and `sizeup calibrate` prints them.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sizeup.errors import MeasureError, SizeupError

__all__ = ["NOISY_REJECT", "OUTLIER_Z", "OUTLIER_MIN", "Ignored", "ClassFit", "CalibrationResult",
           "calibrate_store", "run_device_type", "run_floor", "run_class", "run_workload"]

NOISY_REJECT = 0.25
OUTLIER_Z = 3.5
OUTLIER_MIN = 0.25
WORKLOAD_KINDS = ("inference", "train", "load")


@dataclass(frozen=True, slots=True)
class Ignored:
    """A run (or one point of it) left out of a profile, and why."""

    run_id: int
    reason: str
    batch: int | None = None
    phase: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "batch": self.batch, "phase": self.phase, "reason": self.reason}


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassFit:
    """One fitted profile: its key, the runs and machines it pooled, the fit, and what it left out."""

    key: dict[str, str | None]
    runs: tuple[int, ...]
    hosts: tuple[str, ...]
    fit: Any
    """measure.calibrate_fit.Fit"""
    statistic: str
    device: Any
    """The DeviceSpec the efficiencies are fractions of (measured peaks, or a catalog device's datasheet)."""
    rejected: tuple[Ignored, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"key": dict(self.key), "runs": list(self.runs), "hosts": list(self.hosts), "fit": self.fit.to_dict(),
                "statistic": self.statistic, "device": self.device.id,
                "rejected": [r.to_dict() for r in self.rejected]}


@dataclass(slots=True)
class CalibrationResult:
    fits: list[ClassFit] = field(default_factory=list)
    ignored: list[Ignored] = field(default_factory=list)
    device_type: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"device_type": self.device_type, "fits": [f.to_dict() for f in self.fits],
                "ignored": [i.to_dict() for i in self.ignored]}


@dataclass(slots=True)
class _Point:
    ledger: Any
    seconds: float
    run_id: int
    batch: int | None
    phase: str
    minimum: float | None
    median: float | None


def run_floor(run) -> dict | None:
    """The run's floor (the forward on an empty batch, measure.floor), kept in its first point's extra."""
    return next((p.extra["floor"] for p in run.points if isinstance(p.extra.get("floor"), dict)), None)


def run_device_type(run) -> str | None:
    """The device type a run measured: from its provenance, else derived from its environment (runs stored
    before provenance was kept), else from a serving run's config."""
    if run.provenance.device_type:
        return run.provenance.device_type
    from sizeup.measure.provenance import device_type_of

    env = run.environment
    gpu = str(env.get("device", run.device)).startswith("cuda")
    product = env.get("gpu_name") if gpu else env.get("cpu_model")
    return device_type_of(product if isinstance(product, str) else None, gpu=gpu)


def run_workload(run):
    """The workload a stored run is of (measure.profiles.Workload), to choose the profile that predicts it."""
    from sizeup.measure.profiles import KIND_OF_CLASS, Workload

    cls = run_class(run) or "traced"
    return Workload(kind=KIND_OF_CLASS.get(cls, "vision"), engine=run.provenance.engine,
                    engine_version=run.provenance.engine_version)


def run_class(run) -> str | None:
    """A stored run's workload class: its provenance, else decided from its kind and config, else (a traced
    model's inference) from its ledger at its first measured batch."""
    from sizeup.measure.ledgers import run_ledger

    return _class_of(run, lambda batch: run_ledger(run.target, run.config, batch, train=run.kind == "train"))


def _class_of(run, ledger_at: Callable[[int], Any]) -> str | None:
    if run.provenance.workload_class:
        return run.provenance.workload_class
    from sizeup.measure.profiles import ledger_class
    from sizeup.store.provenance import workload_class_of

    known = workload_class_of(run.kind, run.config)
    if known is not None:
        return known
    batch = next((p.batch for p in run.points if p.status == "ok" and p.batch), None)
    return ledger_class(ledger_at(batch)) if batch else None


def _select(store, runs, device_type: str | None) -> tuple[dict[tuple, list], list[Ignored], dict[int, Any]]:
    """Candidates grouped by (class, engine, version); the rest with their reasons; ledgers cache by run."""
    from sizeup.measure.ledgers import run_ledger

    groups: dict[tuple, list] = {}
    ignored: list[Ignored] = []
    cache: dict[tuple, Any] = {}
    for listed in runs:
        if listed.kind not in WORKLOAD_KINDS:
            ignored.append(Ignored(listed.id, f"a {listed.kind} run: it times no workload a profile prices"))
            continue
        if listed.effective_status not in ("ok", "interrupted"):
            ignored.append(Ignored(listed.id, f"its status is {listed.effective_status}"))
            continue
        run = store.run(listed.id)
        if not any(p.status == "ok" for p in run.points):
            ignored.append(Ignored(run.id, "no point measured ok"))
            continue
        kind_type = run_device_type(run)
        if device_type is not None and kind_type != device_type:
            ignored.append(Ignored(run.id, f"measured on device type {kind_type or 'unknown'}, not {device_type}"))
            continue

        def ledger_at(batch: int, run=run):
            key = (run.id, batch)
            if key not in cache:
                cache[key] = run_ledger(run.target, run.config, batch, train=run.kind == "train")
            return cache[key]

        try:
            cls = _class_of(run, ledger_at)
        except SizeupError as e:
            ignored.append(Ignored(run.id, f"its target cannot be rebuilt as a ledger ({e})"))
            continue
        if cls is None:
            ignored.append(Ignored(run.id, "its workload class is unknown"))
            continue
        if cls == "serving" and not run.config.get("model"):
            ignored.append(Ignored(run.id, "a load test whose model is not known: nothing to price it with (import "
                                           "the result file with --model and --device-type)"))
            continue
        groups.setdefault((cls, run.provenance.engine, run.provenance.engine_version), []).append((run, ledger_at))
    return groups, ignored, cache


def _spread(minimum: float | None, median: float | None) -> float | None:
    if not minimum or median is None or minimum <= 0:
        return None
    return median / minimum - 1


def _points(store, cls: str, run, ledger_at, statistic: str) -> tuple[list[_Point], list[Ignored]]:
    """Every usable point of a run as (ledger, seconds in `statistic`), and the points left out with why."""
    from sizeup.measure.calibrate_fit import stored_statistic

    out, left = [], []
    arch = None
    if cls in ("llm", "serving"):
        from sizeup.ingest.hf_config import load_model

        arch = load_model(run.config["model"] if cls == "serving" else run.target)
    for p in run.points:
        if p.status != "ok":
            continue
        where = {"batch": p.batch, "phase": p.phase}
        if cls == "serving":
            out += _serving_points(run, p, arch)
            continue
        if cls == "train-step" and (p.grad_accumulation or 1) != 1:
            left.append(Ignored(run.id, "gradient accumulation > 1: the fit takes single steps", **where))
            continue
        value = stored_statistic(store, p, statistic)
        if not value:
            left.append(Ignored(run.id, f"no {statistic} recorded", **where))
            continue
        cpu = statistic == "cpu-min"
        repetitions = sorted(store.cpu_samples(p.id) if cpu else store.samples(p.id))
        if len(repetitions) < 2:
            left.append(Ignored(run.id, "noisy: fewer than 2 repetitions, its minimum cannot be checked", **where))
            continue
        gap = _spread(repetitions[0], repetitions[1])
        if gap is not None and gap > NOISY_REJECT:
            left.append(Ignored(run.id, f"noisy: its two fastest repetitions differ by {gap:.0%} (more than "
                                        f"{NOISY_REJECT:.0%}): the minimum is not reproducible", **where))
            continue
        minimum, median = repetitions[0], _median(repetitions)
        if cls == "llm":
            from sizeup.measure.ledgers import llm_ledger

            ledger = llm_ledger(arch, p.phase, p.batch, run.config["prompt"], run.config["context"],
                                run.config.get("dtype", "fp32"))
        else:
            ledger = ledger_at(p.batch)
        out.append(_Point(ledger, value, run.id, p.batch, p.phase, minimum, median))
    return out, left


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _serving_points(run, point, arch) -> list[_Point]:
    """A load test's point: its median TPOT against a decode step at its concurrency, and (at concurrency 1
    only, where no request waits for another) its median TTFT against one prefill."""
    from sizeup.measure.ledgers import serving_ledgers

    cfg = run.config
    tpot, ttft = (point.extra.get(k) or {} for k in ("tpot_s", "ttft_s"))
    concurrency = max(int(point.batch or 1), 1)
    if not cfg.get("prompt_tokens") or not cfg.get("output_tokens"):
        return []
    ledgers = serving_ledgers(arch, concurrency, int(cfg["prompt_tokens"]), int(cfg["output_tokens"]),
                              cfg.get("quant") or "bf16")
    out = []
    if tpot.get("p50"):
        out.append(_Point(ledgers["decode"], float(tpot["p50"]), run.id, concurrency, "decode", None, None))
    if ttft.get("p50") and concurrency == 1:
        out.append(_Point(ledgers["prefill"], float(ttft["p50"]), run.id, concurrency, "prefill", None, None))
    return out


def _held_overhead(device, engine: str | None) -> float:
    """The per-op overhead an LLM fit holds (it has no floor to measure one): the engine's decode overhead
    (its execution model, engines/: CUDA graphs for vLLM) where it lists one, else the per-kernel time an estimate
    prices on this device (price/efficiency.py `table_efficiency`: its kind's, or its vendor's on a system-on-chip)."""
    from sizeup.price.efficiency import table_efficiency

    if engine and device.kind != "cpu":
        try:
            from sizeup.engines import resolve

            overhead = resolve(engine, device).profile.range("decode_overhead_s")
        except (SizeupError, AttributeError, KeyError):
            overhead = None
        if overhead is not None:
            return overhead.typical
    return table_efficiency(device).overhead_s.typical


def _fit(cls: str, device, points: list[_Point], bench: dict | None, floors: list, engine: str | None = None) -> Any:
    from sizeup.measure.calibrate import size_curve
    from sizeup.measure.calibrate_fit import fit_profile, fit_rates

    observations = [(p.ledger, p.seconds) for p in points]
    if cls in ("llm", "serving"):
        return fit_rates(device, observations, _held_overhead(device, engine))
    curve = size_curve(bench) if bench else ()
    return fit_profile(device, observations, curve, [p.batch for p in points], floors if cls != "train-step" else ())


def _residuals(fit, device, points: list[_Point]) -> list[float]:
    """predicted / measured - 1 of each point under the fitted efficiencies."""
    from sizeup.measure.calibrate import profile_efficiency
    from sizeup.price.roofline import price

    curve = tuple(fit.size_curve) if fit.size_curve else ()
    eff = profile_efficiency(fit.values, 0.0, curve)
    return [price(p.ledger, device, eff).total_s.typical / p.seconds - 1 for p in points]


def _outliers(fit, device, points: list[_Point]) -> list[Ignored]:
    """The runs (three or more) or points (fewer runs) whose residuals lie far from the others' (module doc)."""
    residuals = _residuals(fit, device, points)
    by_run: dict[int, list[float]] = {}
    for p, r in zip(points, residuals):
        by_run.setdefault(p.run_id, []).append(r)
    out = []
    if len(by_run) >= 3:
        medians = {k: statistics.median(v) for k, v in by_run.items()}
        for run_id, m in medians.items():
            others = [v for k, v in medians.items() if k != run_id]
            centre = statistics.median(others)
            mad = 1.4826 * statistics.median([abs(v - centre) for v in others])
            if abs(m - centre) > max(OUTLIER_Z * mad, OUTLIER_MIN):
                out.append(Ignored(run_id, f"outlier: its points sit {m - centre:+.0%} from the fit of the other "
                                           f"runs (spread of those: ±{mad:.0%})"))
        return out
    typical = statistics.median([abs(r) for r in residuals])
    for p, r in zip(points, residuals):
        if abs(r) > max(3 * typical, OUTLIER_MIN) and len(points) > 3:
            out.append(Ignored(p.run_id, f"outlier point: predicted {r:+.0%} off where the others are within "
                                         f"±{typical:.0%}", p.batch, p.phase))
    return out


def _fit_group(store, key: tuple, members: list, device, bench: dict | None,
               statistic: str) -> tuple[ClassFit | None, list[Ignored]]:
    from sizeup.measure.calibrate_fit import hit_bound, resolve_statistic
    from sizeup.measure.floor import floor_seconds

    cls, engine, version = key
    if cls in ("llm", "serving"):
        stat = "min" if statistic == "auto" else statistic
    else:
        stat = resolve_statistic(store, [p for run, _ in members for p in run.points], statistic)
    points: list[_Point] = []
    left: list[Ignored] = []
    floors: dict[int, tuple[float, float]] = {}
    for run, ledger_at in members:
        try:
            mine, dropped = _points(store, cls, run, ledger_at, stat)
        except SizeupError as e:
            left.append(Ignored(run.id, f"its points cannot be rebuilt as ledgers ({e})"))
            continue
        ok = sum(1 for p in run.points if p.status == "ok")
        noisy = [d for d in dropped if d.reason.startswith("noisy")]
        if ok and len(noisy) * 2 > ok:
            left.append(Ignored(run.id, f"noisy run: {len(noisy)} of its {ok} points have no reproducible minimum "
                                        f"(their two fastest repetitions differ by more than {NOISY_REJECT:.0%}): a "
                                        "busy machine"))
            continue
        left += dropped
        if not mine:
            left.append(Ignored(run.id, "none of its points can be fitted"))
            continue
        points += mine
        if cls in ("cnn", "traced"):
            seconds = floor_seconds(run_floor(run), stat)
            if seconds:
                from sizeup.price.roofline import LedgerArrays

                floors[run.id] = (float(LedgerArrays.from_ledger(mine[-1].ledger).launches.sum()), seconds)
    if len(points) < 2:
        return None, left + [Ignored(run.id, f"too few points for a {cls} profile ({len(points)}; at least 2)")
                             for run, _ in members if run.id not in {i.run_id for i in left}]
    fit = _fit(cls, device, points, bench, list(floors.values()), engine)
    outliers = _outliers(fit, device, points)
    if outliers:
        out_runs = {o.run_id for o in outliers if o.batch is None}
        out_points = {(o.run_id, o.batch, o.phase) for o in outliers if o.batch is not None}
        kept = [p for p in points if p.run_id not in out_runs and (p.run_id, p.batch, p.phase) not in out_points]
        left += outliers
        if len(kept) < 2:
            return None, left
        points = kept
        fit = _fit(cls, device, points, bench, [f for run_id, f in floors.items() if run_id not in out_runs],
                   engine)
    bound = hit_bound(fit)
    if bound is not None:
        runs = sorted({p.run_id for p in points})
        return None, left + [Ignored(r, f"its {cls} profile was not saved: {bound}") for r in runs]
    runs = tuple(sorted({p.run_id for p in points}))
    hosts = tuple(sorted({run.provenance.host for run, _ in members if run.id in runs and run.provenance.host}))
    return ClassFit(key={"device_type": None, "engine": engine, "engine_version": version, "workload_class": cls},
                    runs=runs, hosts=hosts, fit=fit, statistic=stat, device=device, rejected=tuple(left)), left


def calibrate_store(store, *, device_type: str | None, device_for: Callable[[str], tuple[Any, dict | None]],
                    run_ids: Sequence[int] | None = None, statistic: str = "auto") -> CalibrationResult:
    """Fit one profile per workload class, engine and version from the runs of `device_type` (see the
    module). `device_for(workload_class)` gives the DeviceSpec to fit against and its micro-benchmark (None
    for a catalog device's datasheet peaks)."""
    if run_ids:
        runs = [store.run(r) for r in run_ids]
    else:
        runs = list(store.iter_runs())
    groups, ignored, _ = _select(store, runs, device_type)
    result = CalibrationResult(ignored=ignored, device_type=device_type)
    for key in sorted(groups, key=lambda k: tuple(str(v) for v in k)):
        device, bench = device_for(key[0])
        try:
            fit, left = _fit_group(store, key, groups[key], device, bench, statistic)
        except MeasureError as e:
            result.ignored += [Ignored(run.id, f"its {key[0]} fit failed: {e}") for run, _ in groups[key]]
            continue
        if fit is not None:
            fit.key["device_type"] = device_type
            result.fits.append(fit)
        result.ignored += left
    return result
