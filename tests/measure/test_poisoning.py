"""The poisoning case of issue 31, reproduced and fixed.

Before: `sizeup calibrate` fitted one machine-wide profile from whatever inference runs the store held; a profile
fitted on one noisy CNN run then priced every LLM on `--device local` (0.1 tokens/s and a 7-minute TTFT for an
8B Q4_K_M model) and the next LLM run's predictions, without being asked. Here a store holds a noisy CNN run
and a clean one (timings built from the model's own ledger at a known efficiency, so the right fit is known):

- the old fit (one profile from every run) is reproduced and shown to move the LLM estimate by orders of
  magnitude;
- `calibrate` now rejects the noisy run and says why, fits the clean one into a `cnn` profile, and the LLM
  estimate on `--device local` is exactly the one priced on the measured peaks alone, with an assumption
  saying which fit was not applied; a CNN estimate does take the fit;
- naming the CNN profile for an LLM estimate is refused in one line; a profile saved before classes were kept
  is applied to `--device local` only when named.
"""

import json

import pytest

pytest.importorskip("torch")

from sizeup.cli.main import main  # noqa: E402
from sizeup.measure.calibrate import load_profile, local_device, profile_efficiency, profile_to_dict  # noqa: E402
from sizeup.measure.calibrate_fit import fit_profile  # noqa: E402
from sizeup.measure.calibrate_team import local_device_type  # noqa: E402
from sizeup.measure.ledgers import run_ledger  # noqa: E402
from sizeup.price.roofline import price  # noqa: E402
from sizeup.store import Store  # noqa: E402

TARGET = "sizeup.examples.zoo:mlp_conv_net"
CONFIG = {"inputs": [{"shape": [1, 3, 32, 32], "dtype": None, "name": None}], "dtype": "fp32"}
BENCH = {"device": "cpu", "dtype": "fp32", "gemm": [], "matmul_flops_per_s": 2e11, "copy_bytes_per_s": 2e10,
         "measured": "2026-12-04 10:00:00", "catalog_id": None, "threads": 1}
TRUE = {"tensor_matmul": 0.30, "tensor_conv": 0.30, "tensor_attention": 0.30, "vector": 0.30, "memory": 0.8,
        "overhead_s": 6e-6}
BATCHES = (1, 2, 4, 16, 32)
LLM = ["estimate", "llama-3.1-8b", "--quant", "q4_k_m", "--engine", "llama.cpp", "--device", "local", "--json"]


def true_seconds(device, batch):
    return price(run_ledger(TARGET, CONFIG, batch), device, profile_efficiency(TRUE, 0.0)).total_s.typical


def add_run(store, device, device_type, repetitions):
    """A CNN sweep: at each batch, `repetitions(t)` gives the repetition times around the true time t."""
    run = store.start_run(kind="inference", target=TARGET, device="cpu", config=CONFIG,
                          environment={"torch": "2.13.0", "device": "cpu", "threads": 1},
                          provenance={"host": "box", "engine": "torch", "engine_version": "2.13.0",
                                      "device_type": device_type, "workload_class": "cnn"})
    for batch in BATCHES:
        store.add_point(run, batch=batch, phase="forward", status="ok", samples_s=repetitions(true_seconds(device,
                                                                                                         batch)))
    store.finish_run(run, "ok")
    return run


@pytest.fixture
def store_with_runs(tmp_path):
    db = tmp_path / "runs.sqlite"
    device_type = local_device_type("cpu")
    with Store(db) as store:
        store.save_calibration("local", device="cpu", source_runs=[], key={"device_type": device_type},
                               profile=profile_to_dict(local_device(BENCH), None, None, BENCH, []))
        device = load_profile(store, "local").device
        # noisy: every repetition disturbed, the fastest ones far apart (the machine was busy throughout)
        noisy = add_run(store, device, device_type, lambda t: [9 * t, 15 * t, 24 * t, 40 * t, 31 * t])
        clean = add_run(store, device, device_type, lambda t: [t * (1 + 0.01 * i) for i in (3, 0, 1, 4, 2)])
    return str(db), noisy, clean, device


def llm_tokens_per_s(capsys, *argv):
    assert main([*LLM, *argv]) == 0
    data = json.loads(capsys.readouterr().out)
    return data["decode"]["tokens_per_s"]["typical"], data["prefill"]["ttft_s"]["typical"], data["assumptions"]


def test_the_old_single_profile_poisoned_the_llm_estimate(store_with_runs, capsys):
    db, noisy, clean, device = store_with_runs
    peaks_tps, peaks_ttft, _ = llm_tokens_per_s(capsys, "--db", db)
    # the fit calibrate made before: every inference run of the store, one machine-wide profile named "local"
    with Store(db) as store:
        observations = [(run_ledger(TARGET, CONFIG, p.batch), p.latency_min_s)
                        for run in (noisy,) for p in store.run(run).points]
        old = fit_profile(device, observations, (), [b for b in BATCHES])
        store.save_calibration("local", device="cpu", source_runs=[noisy],
                               profile=profile_to_dict(device, old.values, old.residual_median, BENCH, [noisy]))
    poisoned_tps, poisoned_ttft, _ = llm_tokens_per_s(capsys, "--db", db, "--calibration", "local")
    assert poisoned_tps < peaks_tps / 5 and poisoned_ttft > 5 * peaks_ttft  # the CNN run's noise priced the LLM
    # without --calibration, that legacy profile (its class unknown) is no longer applied: the peaks alone
    implicit_tps, implicit_ttft, notes = llm_tokens_per_s(capsys, "--db", db)
    assert (implicit_tps, implicit_ttft) == (peaks_tps, peaks_ttft)
    assert any("saved before workload classes were kept" in n and "not applied" in n for n in notes)


def test_calibrate_rejects_the_noisy_run_and_confines_the_clean_fit_to_its_class(store_with_runs, capsys):
    db, noisy, clean, _ = store_with_runs
    peaks_tps, peaks_ttft, _ = llm_tokens_per_s(capsys, "--db", db)
    assert main(["calibrate", "--db", db]) == 0
    out = capsys.readouterr().out
    assert f"left out run {noisy}: noisy run: 5 of its 5 points have no reproducible minimum" in out
    assert f"calibrated on 1 run(s) from 1 machine, torch 2.13.0" in out and "class cnn" in out
    assert main(["calibrate", "--db", db, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    [profile] = data["profiles"]
    assert profile["runs"] == [clean] and profile["key"]["workload_class"] == "cnn"
    assert profile["values"]["tensor_conv"] == pytest.approx(TRUE["tensor_conv"], rel=0.1)  # the known efficiency
    assert any(i["run_id"] == noisy and i["reason"].startswith("noisy run") for i in data["ignored"])
    # the LLM estimate is the one on the measured peaks: the CNN fit is not applied, and it says so
    tps, ttft, notes = llm_tokens_per_s(capsys, "--db", db)
    assert (tps, ttft) == (peaks_tps, peaks_ttft)
    assert any("its fits of cnn runs are not applied to a llm estimate" in n for n in notes)
    # naming the CNN profile for an LLM is refused in one line
    assert main([*LLM, "--db", db, "--calibration", profile["name"]]) == 1
    err = capsys.readouterr().err
    assert "holds no profile for a llm estimate" in err or "was fitted on cnn runs" in err
    assert err.count("\n") == 1
    # a CNN's estimate takes it, and says on how many runs and machines
    assert main(["roofline", TARGET, "--input", "4x3x32x32", "--device", "local", "--db", db, "--json"]) == 0
    roof = json.loads(capsys.readouterr().out)
    assert roof["devices"][0]["time_s"]["typical"] == pytest.approx(
        true_seconds(load_profile(Store(db, readonly=True), "local").device, 4), rel=0.15)


def test_the_llm_runs_predictions_do_not_take_the_cnn_fit(store_with_runs, capsys):
    from sizeup.measure.profiles import Workload, choose_profile

    db, _, _, _ = store_with_runs
    assert main(["calibrate", "--db", db, "--json"]) == 0
    capsys.readouterr()
    with Store(db, readonly=True) as store:
        llm = choose_profile(store, "local", Workload(kind="llm", engine="torch"), implicit=True)
        cnn = choose_profile(store, "local", Workload(kind="vision", engine="torch"), implicit=True)
        stale = choose_profile(store, "local", Workload(kind="vision", engine="torch", engine_version="2.14.0"),
                               implicit=True)
    assert not llm.fitted and cnn.fitted and cnn.name.startswith("local/cnn")
    assert any(n.startswith("STALE: fitted on torch 2.13.0") for n in stale.notes) and stale.fitted
