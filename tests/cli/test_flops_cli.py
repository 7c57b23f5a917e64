import json
import subprocess
import sys

import pytest

pytest.importorskip("torch")

from sizeup.cli.main import main  # noqa: E402


def run_json(capsys, *argv):
    assert main(["flops", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_flops_json_has_the_documented_fields(capsys):
    data = run_json(capsys, "sizeup.examples.zoo:c2f", "--input", "1x64x64x64")
    total = data["total"]
    assert total["params"] == 107_264
    assert data["by_kind"]["conv"]["flops"] == 872_415_232
    assert {"flops", "bytes_read", "bytes_written", "params"} <= set(total)
    scopes = {s["scope"]: s for s in data["scopes"]}
    assert scopes["m.0.cv1.conv"]["flops"] == 301_989_888
    assert {"op", "kind", "scope", "phase", "flops", "bytes_read", "bytes_written"} <= set(data["ops"][0])
    assert data["uncounted_ops"] == {}
    mem = data["memory"]
    assert mem["peak_bytes"] == sum(mem["by_category"].values())


def test_flops_table_marks_hot_spots(capsys):
    assert main(["flops", "sizeup.examples.zoo:c2f", "--input", "1x64x64x64", "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("<- hot #") == 2
    assert "872,415,232 in matrix products" in out


def test_train_mode_and_token_inputs(capsys):
    data = run_json(capsys, "sizeup.examples.zoo:gpt2_small", "--input-spec", "int64:1x32", "--train", "--depth", "1")
    assert set(data["by_phase"]) == {"forward", "backward", "optimizer"}
    assert "optimizer_state" in data["memory"]["by_category"]
    assert all(s["depth"] <= 1 for s in data["scopes"])


def test_model_file_target(tmp_path, capsys):
    model = tmp_path / "net.py"
    model.write_text("import torch\n\ndef build():\n    return torch.nn.Linear(8, 4)\n")
    data = run_json(capsys, f"{model}:build", "--input", "2x8")
    assert data["total"]["flops"] == 2 * 2 * 4 * 8 + 2 * 4


@pytest.mark.parametrize("argv, message", [
    (["no/such/file.py:build", "--input", "1x3"], "does not exist"),
    (["sizeup.examples.zoo:nope", "--input", "1x3"], "has no attribute 'nope'"),
    (["sizeup.examples.zoo:c2f", "--input", "1x3x8x8"], "rejected input 1x3x8x8"),
    (["sizeup.examples.zoo:c2f", "--input", "1x-3"], "every dimension must be a positive integer"),
    (["sizeup.examples.zoo:c2f", "--input-spec", "input_ids=int64"], "expected [NAME=]DTYPE:SHAPE"),
])
def test_bad_input_is_one_line_and_exit_1(capsys, argv, message):
    assert main(["flops", *argv]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_cli_process_exit_code_without_traceback():
    proc = subprocess.run([sys.executable, "-m", "sizeup", "flops", "sizeup.examples.zoo:c2f", "--input", "1x3x8x8"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and proc.stderr.startswith("sizeup: error:")
