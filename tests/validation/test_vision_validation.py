"""ResNet-50 images/s against published figures (benchmarks/validate_vision.py prints the table).

Targets from issue 18: batch 1 within 25% and large batch within 15%, median over the check rows
(the rows pytorch-eager's per-op overhead and the two occupancy tiles were derived from are labelled
'tuned' and left out)."""

import statistics

import pytest

pytest.importorskip("torch")

from tests.validation.bench import load_benchmark, load_rows

ROWS = load_rows("vision_measurements.yaml")


def _benchmark():
    return load_benchmark("validate_vision")


def test_rows_are_sourced_and_labelled():
    assert len({r["id"] for r in ROWS}) == len(ROWS) >= 10
    assert all(r["source"] and r["retrieved"] and r["value"] > 0 for r in ROWS)
    assert {r["set"] for r in ROWS} == {"tuned", "check"}
    assert sum(r["set"] == "check" for r in ROWS) >= 2 * sum(r["set"] == "tuned" for r in ROWS)


def test_eager_pytorch_check_rows_meet_the_targets():
    from sizeup.hardware.catalog import load_catalog

    bench, catalog = _benchmark(), load_catalog(include_user=False)
    errors: dict[int, list[float]] = {1: [], 256: []}
    for row in ROWS:
        if row["set"] != "check" or not row["runtime"].startswith("pytorch"):
            continue
        predicted, overhead = bench.predict(row, catalog)
        errors[1 if row["batch"] == 1 else 256].append(abs(predicted / row["value"] - 1))
        if row["batch"] == 1:  # at batch 1 the host's per-op time is most of the forward (the rest:
            assert overhead * predicted > 0.8  # convolutions too small to fill the SMs, price/occupancy.py)
    assert len(errors[1]) >= 3 and len(errors[256]) >= 3
    assert statistics.median(errors[1]) <= 0.25
    assert statistics.median(errors[256]) <= 0.15


def test_tensorrt_at_batch_1_is_bound_by_sm_occupancy_on_volta():
    """The V100 rows the Volta tiles were fitted to land within the target with the law and 3-4x
    optimistic without it; on the held-out Jetson Xavier row (Volta, 8 SMs) the law moves the price toward
    the measurement (still 43% optimistic there). On Ada no tile is set (the L4 row fills its SMs): the
    law leaves it alone."""
    from sizeup.hardware.catalog import load_catalog

    bench, catalog = _benchmark(), load_catalog(include_user=False)
    trt = [r for r in ROWS if r["runtime"].startswith("tensorrt") and r["batch"] == 1]
    assert {r["set"] for r in trt} == {"tuned", "check"}
    for row in trt:
        with_law, _ = bench.predict(row, catalog)
        without, _ = bench.predict(row, catalog, occupancy=False)
        if catalog.device(row["device"]).architecture != "volta":
            assert with_law == without
            continue
        assert abs(with_law / row["value"] - 1) < abs(without / row["value"] - 1)
        if row["set"] == "tuned":
            assert abs(with_law / row["value"] - 1) <= 0.25 and without / row["value"] > 2.5


def test_the_occupancy_law_leaves_large_batch_alone():
    from sizeup.hardware.catalog import load_catalog

    bench, catalog = _benchmark(), load_catalog(include_user=False)
    for row in ROWS:
        if row["batch"] >= 256:
            with_law, _ = bench.predict(row, catalog)
            without, _ = bench.predict(row, catalog, occupancy=False)
            assert 0.98 <= with_law / without <= 1.0


def test_large_batch_check_rows_of_every_runtime_meet_the_target():
    """Issue 18: large batch within 15% median over the check rows, eager and compiled together."""
    from sizeup.hardware.catalog import load_catalog

    bench, catalog = _benchmark(), load_catalog(include_user=False)
    errors = [abs(bench.predict(r, catalog)[0] / r["value"] - 1) for r in ROWS
              if r["set"] == "check" and r["batch"] >= 256]
    assert len(errors) >= 10 and statistics.median(errors) <= 0.15


def test_the_nchw_layout_cost_is_checked_against_timms_nchw_and_nhwc_pair():
    """CHECK (nothing fitted): the same harness and PyTorch build (pt240) in NCHW and channels-last on an RTX 3090
    differs by 43.6 ms per 1024 images; the price difference comes from the transform bytes alone
    (price/conv_algos.py) and must land within 1.5x of it."""
    from sizeup.hardware.catalog import load_catalog

    bench, catalog = _benchmark(), load_catalog(include_user=False)
    nhwc = next(r for r in ROWS if r["id"] == "timm-rtx3090-amp-nhwc-b1024")
    nchw = {**nhwc, "runtime": "pytorch-eager-amp"}
    priced = 1024 / bench.predict(nchw, catalog)[0] - 1024 / bench.predict(nhwc, catalog)[0]
    measured = 1024 / 3219.06 - 1024 / 3729.86
    assert measured / 1.5 < priced < measured * 1.5
