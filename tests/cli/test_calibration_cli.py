"""`--calibration NAME` on estimate, train and plan: measured efficiencies reach every pricing path.

The profile here is written by hand (no torch): a GPU recognised as the catalog's H100 SXM that
reached half its datasheet bf16 peak and half its bandwidth in the micro-benchmarks.
"""

import json

import pytest

from sizeup.cli.main import main
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model
from sizeup.measure.calibrate import load_profile, local_device, profile_to_dict
from sizeup.store import Store
from sizeup.price.efficiency import calibrated, default_efficiency
from sizeup.price.roofline import price
from sizeup.ingest.transformer_ops import Step, transformer_ledger

H100 = load_catalog().device("h100-sxm")
VALUES = {"tensor_matmul": 0.9, "tensor_conv": 0.9, "tensor_attention": 0.8, "vector": 0.7, "memory": 0.95,
          "overhead_s": 8e-6}


def save_profile(db, name="h100-half", catalog_id=H100.id):
    bench = {"device": "cuda:0", "dtype": "bf16", "gemm": [], "measured": "2026-12-02 17:00:00",
             "matmul_flops_per_s": 0.5 * H100.peak_flops_per_s["bf16"],
             "copy_bytes_per_s": 0.5 * H100.memory_bandwidth_bytes_per_s, "catalog_id": catalog_id}
    with Store(db) as store:
        store.save_calibration(name, device="cuda:0", source_runs=[],
                               profile=profile_to_dict(local_device(bench), VALUES, 0.05, bench, []))
        return load_profile(store, name)


def test_rescaled_efficiency_keeps_the_measured_rates(tmp_path):
    profile = save_profile(tmp_path / "runs.sqlite")
    on_h100 = profile.efficiency_on(H100)
    assert on_h100.tensor["matmul"].typical == pytest.approx(0.45)  # 0.9 of a peak that is half the datasheet's
    assert on_h100.memory.typical == pytest.approx(0.475)
    ledger = transformer_ledger(load_model("llama-3.1-8b"), Step(batch=4, new_tokens=1, context=1024),
                                weights="bf16", per_layer=False)
    local = price(ledger, profile.device, profile.efficiency).total_s.typical
    catalog = price(ledger, H100, on_h100).total_s.typical
    assert catalog == pytest.approx(local, rel=1e-9)
    with calibrated({H100.id: on_h100}):  # what the CLI puts in force
        assert price(ledger, H100).total_s.typical == pytest.approx(local, rel=1e-9)
    assert price(ledger, H100).total_s.typical < local  # outside the block: the defaults, faster than measured
    assert default_efficiency("gpu").memory.typical > on_h100.memory.typical


def test_estimate_with_calibration_on_the_catalog_device_and_on_local(tmp_path, capsys):
    db = str(tmp_path / "runs.sqlite")
    save_profile(db)
    argv = ["estimate", "llama-3.1-8b", "--batch", "4", "--json"]
    assert main([*argv, "--device", "h100-sxm"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main([*argv, "--device", "h100-sxm", "--calibration", "h100-half", "--db", db]) == 0
    measured = json.loads(capsys.readouterr().out)
    assert main([*argv, "--device", "local", "--calibration", "h100-half", "--db", db]) == 0
    local = json.loads(capsys.readouterr().out)
    tpot = [d["decode"]["latency_per_token_s"]["typical"] for d in (plain, measured, local)]
    assert tpot[1] > 1.2 * tpot[0]  # half the datasheet bandwidth measured: decode (memory-bound) slower
    weights = measured["memory"]["weights_bytes"]
    assert tpot[1] >= weights / (0.5 * 0.95 * H100.memory_bandwidth_bytes_per_s)  # at least one read of the weights
    assert tpot[2] == pytest.approx(tpot[1], rel=1e-6)  # same hardware, same measured rates
    assert any("calibration 'h100-half'" in a for a in measured["assumptions"])


def test_train_and_plan_take_the_calibration(tmp_path, capsys):
    db = str(tmp_path / "runs.sqlite")
    save_profile(db)
    argv = ["train", "llama-3.1-8b", "--method", "lora", "--device", "h100-sxm", "--json"]
    assert main(argv) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main([*argv, "--calibration", "h100-half", "--db", db]) == 0
    measured = json.loads(capsys.readouterr().out)
    assert measured["step"]["latency_s"]["typical"] > plain["step"]["latency_s"]["typical"]
    assert any("calibration 'h100-half'" in a for a in measured["assumptions"])
    scenario = ["plan", "llama-3.1-8b", "--task", "api", "--rps", "2", "--device", "h100-sxm", "--format", "json"]
    assert main([*scenario, "--calibration", "h100-half", "--db", db]) in (0, 2)
    data = json.loads(capsys.readouterr().out)
    assert any("calibration 'h100-half'" in a for a in data["plan"]["assumptions"])


@pytest.mark.parametrize(("argv", "message"), [
    (["estimate", "llama-3.1-8b", "--device", "local"], "run 'sizeup calibrate --quick' first"),
    (["estimate", "llama-3.1-8b", "--device", "a100-80g", "--calibration", "h100-half"],
     "was measured on catalog device 'h100-sxm-80gb'"),
    (["train", "llama-3.1-8b", "--device", "a100-80g", "--calibration", "h100-half"], "not on 'a100"),
    (["estimate", "llama-3.1-8b", "--device", "local", "--calibration", "nope"], "nope"),
    (["plan", "llama-3.1-8b", "--calibration", "uncatalogued"], "which is not in the catalog"),
])
def test_calibration_errors_are_one_line(tmp_path, capsys, argv, message):
    db = str(tmp_path / "runs.sqlite")
    save_profile(db)
    save_profile(db, "uncatalogued", catalog_id=None)
    assert main([*argv, "--db", db]) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_local_uses_the_default_profile_when_one_is_saved(tmp_path, capsys):
    db = str(tmp_path / "runs.sqlite")
    save_profile(db, "local")
    assert main(["estimate", "llama-3.1-8b", "--device", "local", "--db", db, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert any("calibration 'local'" in a for a in data["assumptions"])


def test_roofline_on_the_catalog_device_with_its_calibration_matches_local(tmp_path, capsys):
    db = str(tmp_path / "runs.sqlite")
    save_profile(db)
    argv = ["roofline", "sizeup.examples.zoo:llama_block", "--input", "1x128x512", "--calibration", "h100-half",
            "--db", db, "--json"]
    times = []
    for device in ("local", "h100-sxm"):
        assert main([*argv, "--device", device]) == 0
        times.append(json.loads(capsys.readouterr().out)["devices"][0]["time_s"]["typical"])
    assert times[1] == pytest.approx(times[0], rel=1e-9)
