"""The calibration fit on synthetic stored points (no timing): a known per-op overhead and rate come back, noise
that only adds latency does not bias the minimum-based fit, and stores from before CPU times were kept still load."""

import sqlite3

import numpy as np
import pytest

from sizeup.errors import ConfigError, MeasureError
from sizeup.ledger import Ledger, OpKind, OpRecord
from sizeup.measure.calibrate import (fixed_cost_intercept, local_device, overhead_comparison, overhead_term,
                                      profile_efficiency)
from sizeup.measure.calibrate_fit import (fit_profile, line_fit, point_statistic, resolve_statistic, spread,
                                          stored_statistic)
from sizeup.store import SCHEMA_VERSION, Store
from sizeup.store.migrations import v0001_initial, v0002_writer
from sizeup.price.roofline import price

BENCH = {"matmul_flops_per_s": 100e9, "copy_bytes_per_s": 20e9, "device": "cpu", "dtype": "fp32"}
DEVICE = local_device(BENCH)
TRUTH = {"tensor_matmul": 0.6, "tensor_conv": 0.6, "tensor_attention": 0.6, "vector": 0.6, "memory": 1.0,
         "overhead_s": 50e-6}
BATCHES = (1, 2, 4, 8, 16, 32)


def cnn(batch: int, layers: int = 40) -> Ledger:
    """A CNN-shaped ledger on small images: per layer a convolution (weights read every forward, work and
    activations growing with the batch) and a ReLU, then a classifier whose 40 MB of weights cost the same time
    at every batch — 2 x layers + 1 kernels."""
    ops = [OpRecord(op="aten.mm", kind=OpKind.MATMUL, scope="fc", flops=2 * 1000 * 1000 * batch,
                    matmul_flops=2 * 1000 * 1000 * batch, bytes_read=40_000_000, bytes_written=4000 * batch)]
    for i in range(layers):
        flops = 2 * 64 * 64 * 9 * 8 * 8 * batch
        act = 4 * 64 * 8 * 8 * batch
        ops.append(OpRecord(op="aten.convolution", kind=OpKind.CONV, scope=f"l{i}.conv", flops=flops,
                            matmul_flops=flops, bytes_read=4 * 64 * 64 * 9 + act, bytes_written=act))
        ops.append(OpRecord(op="aten.relu", kind=OpKind.ELEMENTWISE, scope=f"l{i}.relu", flops=act // 4,
                            bytes_read=act, bytes_written=act))
    return Ledger(ops=ops)


def true_time(batch: int) -> float:
    return price(cnn(batch), DEVICE, profile_efficiency(TRUTH, 0.0)).total_s.typical


def store_points(store: Store, samples_of) -> list:
    """One stored run with a point per batch; `samples_of(batch, t)` gives its repetition times."""
    run = store.start_run(kind="inference", target="synthetic", device="cpu", config={}, environment={})
    for b in BATCHES:
        store.add_point(run, batch=b, phase="forward", status="ok", samples_s=samples_of(b, true_time(b)))
    store.finish_run(run, "ok")
    return list(store.run(run).points)


def fit_stored(store: Store, points, statistic: str, split: bool = True):
    observations = [(cnn(p.batch), stored_statistic(store, p, statistic)) for p in points]
    return fit_profile(DEVICE, observations, batches=[p.batch for p in points] if split else None)


@pytest.mark.parametrize("split", [True, False], ids=["small-then-large", "joint"])
def test_a_known_overhead_and_rate_are_recovered_from_stored_points(tmp_path, split):
    with Store(tmp_path / "runs.sqlite") as store:
        points = store_points(store, lambda b, t: [t * 1.2, t, t * 1.05])
        fit = fit_stored(store, points, "min", split)
    assert fit.values["overhead_s"] == pytest.approx(50e-6, rel=0.02)
    assert fit.values["tensor_conv"] == pytest.approx(0.6, rel=0.02)
    assert fit.values["vector"] == fit.values["tensor_conv"]  # one compute factor
    assert fit.residual_median < 0.01 and fit.points == len(BATCHES)
    assert fit.overhead_stderr_s is not None and fit.overhead_stderr_s < 1e-6  # noise-free: a sure fit
    assert fit.overhead_source == "fitted" and [n for n in fit.notes if "fitted, not measured" in n]


def test_noise_that_only_adds_latency_does_not_bias_the_minimum_based_fit(tmp_path):
    rng = np.random.default_rng(7)

    def noisy(batch, t):
        # load slows the small (short) points most, as a busy machine does; every repetition is >= t
        scale = 0.6 if batch <= 8 else 0.1
        return list(t * (1 + rng.exponential(scale, size=100)))

    with Store(tmp_path / "runs.sqlite") as store:
        points = store_points(store, noisy)
        by_min = fit_stored(store, points, "min")
        by_median = fit_stored(store, points, "median")
    assert by_min.values["overhead_s"] == pytest.approx(50e-6, rel=0.05)
    assert by_min.values["tensor_conv"] == pytest.approx(0.6, rel=0.05)
    # the median keeps the load: the same points fitted on it blame the load on the per-op overhead
    assert by_median.values["overhead_s"] > 1.3 * 50e-6


def test_small_batches_on_other_kernels_keep_the_overhead_and_say_so():
    """Small batches slower per image than the large ones (as oneDNN's convolutions on this CPU): the overhead
    still comes from the small batches, the profile's rate from the large ones, and a note says they differ."""
    slow = {**TRUTH, **{k: 0.2 for k in ("tensor_matmul", "tensor_conv", "tensor_attention", "vector")}}
    times = [price(cnn(b), DEVICE, profile_efficiency(slow if b <= 8 else TRUTH, 0.0)).total_s.typical
             for b in BATCHES]
    fit = fit_profile(DEVICE, [(cnn(b), t) for b, t in zip(BATCHES, times)], batches=BATCHES)
    assert fit.values["overhead_s"] == pytest.approx(50e-6, rel=0.02)
    assert fit.values["tensor_conv"] == pytest.approx(0.6, rel=0.02)
    assert fit.small_batch_compute == pytest.approx(0.2, rel=0.02)
    assert any("other kernels" in n for n in fit.notes)


def test_compare_measures_the_overhead_on_the_floor_and_keeps_the_intercept_beside_it():
    profile = profile_efficiency(TRUTH, 0.0)
    no_overhead = profile_efficiency({**TRUTH, "overhead_s": 0.0}, 0.0)
    rows = [(b, true_time(b), true_time(b), price(cnn(b), DEVICE, no_overhead).total_s.typical) for b in BATCHES]
    term = overhead_term(price(cnn(1), DEVICE, profile))
    assert term["kernels"] == 81 and term["predicted_s"] == pytest.approx(81 * 50e-6)
    floor = {"min_s": 81 * 40e-6, "median_s": 81 * 42e-6, "cpu_min_s": 81 * 40e-6, "repetitions": 20}
    out = overhead_comparison(rows, term, {"overhead_stderr_s": 1e-6}, "cpu-min", floor)
    # measured: the floor (the forward on an empty batch), not anything fitted
    assert out["measured_s"] == pytest.approx(81 * 40e-6) and out["error"] == pytest.approx(50 / 40 - 1)
    assert out["source"] == "floor" and out["pinned"]
    # the batch line's intercept, less the classifier's weights read every forward (2 ms at 20 GB/s), is kept
    assert out["intercept_s"] == pytest.approx(81 * 50e-6, rel=1e-6) and out["intercept_error"] == pytest.approx(0, abs=1e-6)
    assert out["fixed_work_s"] == pytest.approx(40e6 / 20e9, rel=0.01)
    assert out["predicted_stderr_s"] == pytest.approx(81e-6)
    # no floor (a run from before floors were timed, or a model that fails on an empty batch): no measured value
    missing = overhead_comparison(rows, term, None, "min", {"error": "RuntimeError: cannot reshape"})
    assert missing["measured_s"] is None and missing["error"] is None and not missing["pinned"]
    assert missing["intercept_s"] == pytest.approx(81 * 50e-6, rel=1e-6)
    assert overhead_comparison(rows[:1], term, None, "min")["intercept_s"] is None
    # a floor timed on a busy machine (median far over its minimum) is not pinned
    busy = {**floor, "median_s": 81 * 60e-6}
    assert not overhead_comparison(rows, term, None, "cpu-min", busy)["pinned"]


def test_line_fit_and_the_statistics():
    assert line_fit([(1, 4.5e-3), (2, 6e-3), (4, 9e-3), (8, 15e-3)])[:2] == pytest.approx((3e-3, 1.5e-3))
    intercept, _, se = line_fit([(1, 4.6e-3), (2, 5.9e-3), (4, 9.1e-3), (8, 14.9e-3)])
    assert intercept == pytest.approx(3e-3, rel=0.1) and 0 < se < 1e-3
    assert line_fit([(1, 1.0), (2, 2.0)])[2] is None and line_fit([(1, 1.0), (1, 2.0)]) is None
    assert fixed_cost_intercept([(1, 4.5e-3), (2, 6e-3), (64, 1.0)]) == pytest.approx(3e-3)
    samples = [3.0, 1.0, 2.0, 10.0]
    assert point_statistic(samples, "min") == 1.0 and point_statistic(samples, "median") == 2.5
    assert point_statistic(samples, "p10") == pytest.approx(1.3) and point_statistic([], "min") is None
    assert spread(1.0, 1.25) == pytest.approx(0.25) and spread(None, 1.0) is None
    with pytest.raises(MeasureError, match="statistic 'p3'"):
        point_statistic(samples, "p3")


def test_fit_refuses_too_few_or_bad_points():
    with pytest.raises(MeasureError, match="at least 2 measured points"):
        fit_profile(DEVICE, [(cnn(1), 1e-3)])
    with pytest.raises(MeasureError, match="expected a positive number of seconds"):
        fit_profile(DEVICE, [(cnn(1), 1e-3), (cnn(2), 0.0)])


def test_cpu_times_are_stored_beside_the_wall_times(tmp_path):
    with Store(tmp_path / "runs.sqlite") as store:
        run = store.start_run(kind="inference", target="t", device="cpu", config={}, environment={})
        with_cpu = store.add_point(run, batch=1, phase="forward", status="ok", samples_s=[2.0, 1.5],
                                   cpu_samples_s=[1.0, 1.2])
        without = store.add_point(run, batch=2, phase="forward", status="ok", samples_s=[3.0])
        assert store.samples(with_cpu) == [2.0, 1.5] and store.cpu_samples(with_cpu) == [1.0, 1.2]
        assert store.cpu_samples(without) == []
        points = store.run(run).points
        assert stored_statistic(store, points[0], "cpu-min") == 1.0
        assert stored_statistic(store, points[1], "cpu-min") is None
        assert resolve_statistic(store, points[:1], "auto") == "cpu-min"
        assert resolve_statistic(store, points, "auto") == "min"  # a point without CPU times: the wall minimum
        with pytest.raises(ConfigError, match="1 CPU times for 2 repetitions"):
            store.add_point(run, batch=4, phase="forward", status="ok", samples_s=[1.0, 2.0], cpu_samples_s=[1.0])


@pytest.mark.parametrize("version", [1, 2])
def test_stores_from_before_cpu_times_load_and_fit_on_the_wall_minimum(tmp_path, version):
    db = tmp_path / "old.sqlite"
    conn = sqlite3.connect(db)
    for statement in v0001_initial.SQLITE[:-1]:  # the version-1 tables, as sizeup wrote them then
        conn.execute(statement)
    for statement in v0002_writer.SQLITE if version == 2 else ():
        conn.execute(statement)
    conn.execute("INSERT INTO schema_version VALUES (?)", (version,))
    conn.execute("INSERT INTO runs (created, kind, target, device, status, config, environment) "
                 "VALUES ('2026-12-01T00:00:00+00:00', 'inference', 'old', 'cpu', 'ok', '{}', '{}')")
    for point_id, (batch, values) in enumerate([(1, [2e-3, 1e-3]), (2, [3e-3, 1.5e-3])], start=1):
        conn.execute("INSERT INTO points (id, run_id, created, batch, phase, status, latency_p50_s, latency_min_s, "
                     "repetitions, extra) VALUES (?, 1, '2026-12-01T00:00:01+00:00', ?, 'forward', 'ok', ?, ?, ?, "
                     "'{}')", (point_id, batch, float(np.median(values)), min(values), len(values)))
        conn.executemany("INSERT INTO samples (point_id, seq, value_s) VALUES (?, ?, ?)",
                         [(point_id, i, v) for i, v in enumerate(values)])
    conn.commit()
    conn.close()
    before = db.read_bytes()
    with Store(db, readonly=True) as store:
        assert store.version == version
        points = store.run(1).points
        assert store.cpu_samples(points[0].id) == []
        assert resolve_statistic(store, points, "auto") == "min"
        assert [stored_statistic(store, p, "min") for p in points] == [1e-3, 1.5e-3]
        assert stored_statistic(store, points[0], "p10") == pytest.approx(1.1e-3)
    assert db.read_bytes() == before  # reading never migrates
    with Store(db) as store:  # writing migrates; the old samples have no CPU time
        assert store.version == SCHEMA_VERSION
        assert store.samples(1) == [2e-3, 1e-3] and store.cpu_samples(1) == []
        new = store.add_point(1, batch=4, phase="forward", status="ok", samples_s=[5e-3], cpu_samples_s=[4e-3])
        assert store.cpu_samples(new) == [4e-3]
