"""`compare_run` of a serving run (`sizeup load`, or a result file brought in by `sizeup runs import`): the plan's
promise beside the measurement — the scenario's SLA percentile by percentile, and sizeup's own prediction (TTFT,
TPOT) for the run's model, device type, engine, concurrency and token lengths."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sizeup.errors import ConfigError

__all__ = ["ServingComparison", "compare_serving"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ServingComparison:
    run: Any
    """The stored run (`sizeup.store.RunRecord`), for its provenance."""
    sla_source: str | None
    points: tuple[dict[str, Any], ...]
    """Per concurrency: measured percentiles, the SLA rows, sizeup's predicted range beside them."""
    calibration: str | None

    @property
    def sla(self) -> dict[str, dict[str, Any]]:
        return self.points[0]["sla"]

    @property
    def all_met(self) -> bool:
        return all(r["met"] for row in self.points for r in row["sla"].values())

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run.id, "target": self.run.target, "sla_source": self.sla_source, "sla": self.sla,
                "all_met": self.all_met, "points": list(self.points), "calibration": self.calibration,
                "provenance": self.run.provenance.to_dict()}


def compare_serving(run, store, *, calibration: str | None, sla: str | Path | None) -> ServingComparison:
    from sizeup.measure.serving_compare import prediction_rows, serving_points, sla_rows

    points = serving_points(run)
    if not points:
        raise ConfigError(f"run {run.id}: the serving run recorded no successful requests")
    if sla:
        from sizeup.plan.scenario import load_scenario

        promised, source = load_scenario(sla).sla.targets, str(sla)
    else:
        first = next(p for p in run.points if p.status == "ok")
        promised, source = first.extra.get("sla") or {}, "the scenario given to sizeup load --sla"
    profile = _profile(store, run, calibration)
    rows = []
    for point in points:
        predicted, why = _predictions(run, point, profile)
        rows.append({**point, "sla": sla_rows(promised, point) if promised else {},
                     "predicted": prediction_rows(point, predicted), "prediction_note": why})
    if not promised and not any(r["predicted"] for r in rows):
        raise ConfigError(f"run {run.id}: nothing to compare it with: give --sla SCENARIO.yaml, or import it with "
                          "--model and --device-type for sizeup's prediction")
    return ServingComparison(run=run, sla_source=source if promised else None, points=tuple(rows),
                             calibration=profile.name if profile else None)


def _predictions(run, point: dict, profile) -> tuple[dict, str | None]:
    """{"ttft": range, "tpot": range} from `estimate` at the point's concurrency; or ({}, why not)."""
    from sizeup.api.calibration import calibrated_scope
    from sizeup.api.inference import estimate
    from sizeup.errors import SizeupError
    from sizeup.hardware.catalog import load_catalog

    model, device = run.config.get("model"), run.provenance.device_type
    if not model or not device or device == "remote":
        return {}, "no prediction: the run names no model and device type (import it with --model and --device-type)"
    try:
        devices = [load_catalog().device(device)] if profile is not None else []
        with calibrated_scope(profile, devices):
            result = estimate(model, device=device, engine=run.provenance.engine or "vllm",
                              batch=point["concurrency"], prompt=max(1, round(run.config.get("prompt_tokens") or 512)),
                              output=max(1, round(run.config.get("output_tokens") or 128)),
                              quant=run.config.get("quant") or "bf16", gpus=int(run.config.get("gpus") or 1))
    except SizeupError as e:
        return {}, f"no prediction: {e}"
    data = result.to_dict()
    return {"ttft": data["prefill"]["ttft_s"], "tpot": data["decode"]["latency_per_token_s"]}, None


def _profile(store, run, calibration: str | None):
    if not calibration:
        return None
    from sizeup.measure.profiles import Workload, choose_profile

    return choose_profile(store, calibration, Workload(kind="llm", engine=run.provenance.engine,
                                                       engine_version=run.provenance.engine_version),
                          implicit=False)
