"""Measuring an ONNX file through ONNX Runtime: sweep points stored, predictions from the graph's own
ledger, calibration and compare over ONNX runs, clear errors for what cannot be measured."""

import json

import pytest

ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

from sizeup.cli.main import main  # noqa: E402
from sizeup.examples import zoo  # noqa: E402
from sizeup.measure.onnx_runner import load_onnx  # noqa: E402
from sizeup.store import Store  # noqa: E402


@pytest.fixture(scope="module")
def mlp_onnx(tmp_path_factory):
    """A small conv + MLP net with a symbolic batch dimension."""
    path = tmp_path_factory.mktemp("onnx") / "mlp_conv.onnx"
    model = zoo.mlp_conv_net().eval()
    torch.onnx.export(model, (torch.randn(1, 3, 32, 32),), str(path), dynamo=False, input_names=["x"],
                      dynamic_axes={"x": {0: "batch"}})
    return path


def test_sweep_stores_points_with_predictions_and_compare_reads_them(mlp_onnx, tmp_path, capsys):
    db = str(tmp_path / "runs.sqlite")
    assert main(["measure", str(mlp_onnx), "--batch", "1,4", "--budget", "30s", "--db", db, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [p["status"] for p in data["points"]] == ["ok", "ok"]
    for p in data["points"]:
        assert p["latency_p50_s"] > 0 and p["predicted_s"] > 0
        assert p["latency_p50_s"] <= p["latency_p95_s"] <= p["latency_p99_s"]
    with Store(db, create=False) as store:
        run = store.run(data["run_id"])
        assert run.config["onnx"] and run.config["batch_dim"] == "batch"
        assert run.config["backend"].startswith("onnxruntime")
        assert [p.batch for p in run.points] == [1, 4]
    assert main(["compare", str(data["run_id"]), "--db", db, "--json"]) == 0
    compared = json.loads(capsys.readouterr().out)
    assert [r["batch"] for r in compared["points"]] == [1, 4]
    # the predicted memory peak grows with the batch (activations), from the ONNX graph's own ledger
    assert compared["points"][1]["predicted_memory_bytes"] > compared["points"][0]["predicted_memory_bytes"]
    run_id = data["run_id"]
    for _ in range(3):  # a busy machine can leave a run with no reproducible minimum: calibrate refuses it
        assert main(["calibrate", "--runs", str(run_id), "--db", db, "--json"]) == 0
        fitted = json.loads(capsys.readouterr().out)
        if fitted["fitted"] or not all("noisy" in i["reason"] for i in fitted["ignored"]):
            break
        assert main(["measure", str(mlp_onnx), "--batch", "1,4", "--budget", "30s", "--db", db, "--json"]) == 0
        run_id = json.loads(capsys.readouterr().out)["run_id"]
    assert fitted["fitted"] and fitted["residual_median"] is not None, fitted["ignored"]


def test_the_batch_dimension_and_unbound_dimensions(tmp_path, mlp_onnx):
    model = load_onnx(mlp_onnx)
    assert model.batch_dim == "batch" and model.dims_at(8) == {"batch": 8}
    from onnx import TensorProto, helper, save

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq"])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    path = tmp_path / "seq.onnx"
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    with pytest.raises(Exception, match=r"input 'x' axis 1 has the unbound size 'seq': give it with --dim seq=SIZE"):
        load_onnx(path)
    assert load_onnx(path, dims={"seq": 16}).dims_at(2) == {"seq": 16, "batch": 2}


@pytest.mark.parametrize(("argv", "message"), [
    (["--train"], "an ONNX file is measured for inference"),
    (["--input", "1x3x32x32"], "an ONNX file is measured for inference"),
    (["--profile"], "--profile times torch ops"),
    (["--device", "mps"], "ONNX files are measured on cpu or cuda"),
])
def test_what_cannot_be_measured_is_one_line_and_records_nothing(mlp_onnx, tmp_path, capsys, argv, message):
    db = tmp_path / "runs.sqlite"
    code = main(["measure", str(mlp_onnx), "--batch", "1", "--db", str(db), *argv])
    assert code == 1
    err = capsys.readouterr().err.strip()
    assert (message in err or "mps" in err) and "\n" not in err
    if db.exists():
        with Store(db, create=False) as store:
            assert not store.runs()


def test_a_corrupt_onnx_file_is_named(tmp_path, capsys):
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"\x08\x07not a protobuf at all")
    assert main(["measure", str(bad), "--batch", "1", "--db", str(tmp_path / "runs.sqlite")]) == 1
    err = capsys.readouterr().err.strip()
    assert "broken.onnx" in err and "\n" not in err
