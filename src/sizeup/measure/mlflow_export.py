"""Stored runs and their predictions, logged to MLflow (`sizeup runs export --mlflow`, the `[mlflow]` extra),
for teams that track experiments there.

Each sizeup run becomes one MLflow run named "sizeup-<id>": its kind, target, device, status and provenance as
tags (`sizeup.*`), its config as params, and per point (the point's index as the step) the measured latency
percentiles, throughput and peak memory, and — where the run kept one — sizeup's prediction beside them
(`predicted_s`, `prediction_error` = predicted / measured median - 1). Serving runs log their TTFT / TPOT / ITL /
end-to-end percentiles. `run_payload` builds all of that as plain data; only `export_runs` imports mlflow.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from sizeup.errors import ConfigError

__all__ = ["run_payload", "export_runs"]

MAX_PARAM_CHARS = 6000
"""MLflow's limit on a param value (mlflow.utils.validation.MAX_PARAM_VAL_LENGTH since MLflow 2.x)."""
_KEY = re.compile(r"[^A-Za-z0-9_\-. /]")


def _key(text: str) -> str:
    return _KEY.sub("_", text)[:250]


def _flat(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flat(f"{prefix}.{k}" if prefix else str(k), v, out)
        return
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    out[_key(prefix)] = text[:MAX_PARAM_CHARS]


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def run_payload(record) -> dict[str, Any]:
    """{"run_name", "tags", "params", "metrics": [(key, value, step)]} of a stored run (a `RunRecord` with
    its points)."""
    tags = {"sizeup.run_id": str(record.id), "sizeup.kind": record.kind, "sizeup.target": record.target[:5000],
            "sizeup.device": record.device, "sizeup.status": record.effective_status,
            "sizeup.created": record.created}
    if record.uid:
        tags["sizeup.uid"] = record.uid
    for key, value in record.provenance.to_dict().items():
        if value is not None:
            tags[f"sizeup.provenance.{key}"] = str(value)
    params: dict[str, str] = {}
    _flat("", record.config, params)
    metrics: list[tuple[str, float, int]] = []
    for step, point in enumerate(record.points):
        if point.status != "ok":
            continue
        for name in ("latency_p50_s", "latency_p95_s", "latency_p99_s", "latency_min_s", "throughput_per_s",
                     "peak_memory_bytes"):
            value = _finite(getattr(point, name))
            if value is not None:
                metrics.append((name, value, step))
        for name in ("batch", "grad_accumulation"):
            value = _finite(getattr(point, name))
            if value is not None:
                metrics.append((name, value, step))
        predicted = _finite(point.extra.get("predicted_s"))
        if predicted is not None:
            metrics.append(("predicted_s", predicted, step))
            if point.latency_p50_s:
                metrics.append(("prediction_error", predicted / point.latency_p50_s - 1, step))
        for metric in ("ttft", "tpot", "itl", "e2e"):
            for pct, value in (point.extra.get(f"{metric}_s") or {}).items():
                value = _finite(value)
                if value is not None:
                    metrics.append((_key(f"{metric}_{pct}_s"), value, step))
    return {"run_name": f"sizeup-{record.id}", "tags": tags, "params": params, "metrics": metrics}


def export_runs(store, run_ids, *, tracking_uri: str | None = None,
                experiment: str = "sizeup") -> list[tuple[int, str]]:
    """Log each run (see the module); returns (sizeup run id, MLflow run id) pairs."""
    try:
        import mlflow
        from mlflow.entities import Metric, Param, RunTag
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise ConfigError("--mlflow needs MLflow: pip install 'sizeup[mlflow]'") from None
    if tracking_uri:
        mlflow.set_tracking_uri(tracking_uri)
    try:
        return _log(MlflowClient(), store, run_ids, experiment, Metric, Param, RunTag)
    except ConfigError:
        raise
    except Exception as e:  # MlflowException, a server that refuses or cannot be reached
        first = str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
        raise ConfigError(f"MLflow at {mlflow.get_tracking_uri()}: {first}") from None


def _log(client, store, run_ids, experiment: str, Metric, Param, RunTag) -> list[tuple[int, str]]:
    found = client.get_experiment_by_name(experiment)
    experiment_id = found.experiment_id if found else client.create_experiment(experiment)
    out = []
    for run_id in run_ids:
        payload = run_payload(store.run(run_id))
        run = client.create_run(experiment_id, run_name=payload["run_name"])
        mlflow_id = run.info.run_id
        tags = [RunTag(k, v) for k, v in payload["tags"].items()]
        params = [Param(k, v) for k, v in payload["params"].items()]
        metrics = [Metric(k, v, 0, step) for k, v, step in payload["metrics"]]
        for start in range(0, max(len(tags), len(params), len(metrics)), 100):  # MLflow's per-call limits
            client.log_batch(mlflow_id, metrics=metrics[start:start + 100], params=params[start:start + 100],
                             tags=tags[start:start + 100])
        client.set_terminated(mlflow_id, "FINISHED" if payload["tags"]["sizeup.status"] == "ok" else "FAILED")
        out.append((run_id, mlflow_id))
    return out
