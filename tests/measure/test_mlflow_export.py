"""`sizeup runs export --mlflow`: the payload (tags with provenance, params from the config, per-point metrics
with the prediction beside the measurement) always; the real export to a local MLflow file store where MLflow is
installed (`pip install 'sizeup[mlflow]'`; skipped otherwise)."""

import json

import pytest

from sizeup.cli.main import main
from sizeup.measure.mlflow_export import run_payload
from sizeup.store import Store


def stored(db):
    with Store(db) as store:
        run = store.start_run(kind="inference", target="cnn.py:build", device="cpu",
                              config={"inputs": [{"shape": [1, 3, 32, 32]}], "dtype": "fp32"}, environment={},
                              provenance={"host": "node-1", "engine": "torch", "engine_version": "2.13.0",
                                          "workload_class": "cnn", "device_type": "cpu:Xeon"})
        store.add_point(run, batch=1, phase="forward", status="ok", samples_s=[0.010, 0.011, 0.012],
                        extra={"predicted_s": 0.009})
        store.add_point(run, batch=64, phase="forward", status="oom", error="out of memory")
        store.add_point(run, batch=2, phase="forward", status="ok", samples_s=[0.02, 0.021, 0.022],
                        extra={"predicted_s": float("nan")})
        store.finish_run(run, "ok")
        return run, store.run(run)


def test_the_payload_carries_provenance_params_and_predictions(tmp_path):
    _, record = stored(tmp_path / "runs.sqlite")
    payload = run_payload(record)
    assert payload["run_name"] == f"sizeup-{record.id}"
    assert payload["tags"]["sizeup.provenance.engine_version"] == "2.13.0"
    assert payload["tags"]["sizeup.provenance.workload_class"] == "cnn"
    assert json.loads(payload["params"]["inputs"]) == [{"shape": [1, 3, 32, 32]}]
    metrics = {(k, step): v for k, v, step in payload["metrics"]}
    assert metrics[("predicted_s", 0)] == 0.009
    assert metrics[("prediction_error", 0)] == pytest.approx(0.009 / 0.011 - 1)
    assert ("predicted_s", 2) not in metrics and not any(step == 1 for _, step in metrics)  # NaN, OOM left out


def test_export_to_a_local_mlflow_store(tmp_path, capsys, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 keeps its file store for tests like this one
    run, record = stored(tmp_path / "runs.sqlite")
    uri = (tmp_path / "mlruns").as_uri()
    assert main(["runs", "export", str(run), "--mlflow", "--tracking-uri", uri, "--experiment", "team",
                 "--db", str(tmp_path / "runs.sqlite")]) == 0
    out = capsys.readouterr().out
    mlflow_id = out.split("MLflow run ")[1].split()[0]
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)
    logged = client.get_run(mlflow_id)
    assert logged.data.tags["sizeup.provenance.host"] == "node-1" and logged.data.params["dtype"] == "fp32"
    assert logged.data.metrics["predicted_s"] == 0.009 and logged.info.status == "FINISHED"
    history = client.get_metric_history(mlflow_id, "latency_p50_s")
    assert [m.step for m in history] == [0, 2]
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE")
    assert main(["runs", "export", str(run), "--mlflow", "--tracking-uri", (tmp_path / "other").as_uri(),
                 "--db", str(tmp_path / "runs.sqlite")]) == 1  # MLflow's own refusal, in one line
    err = capsys.readouterr().err
    assert err.startswith("sizeup: error: MLflow at ") and err.count("\n") == 1


def test_without_mlflow_the_export_says_what_to_install(tmp_path, capsys, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_mlflow(name, *args, **kwargs):
        if name == "mlflow" or name.startswith("mlflow."):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    run, _ = stored(tmp_path / "runs.sqlite")
    monkeypatch.setattr(builtins, "__import__", no_mlflow)
    assert main(["runs", "export", str(run), "--mlflow", "--db", str(tmp_path / "runs.sqlite")]) == 1
    err = capsys.readouterr().err
    assert "pip install 'sizeup[mlflow]'" in err and err.count("\n") == 1
