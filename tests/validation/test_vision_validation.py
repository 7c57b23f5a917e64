"""ResNet-50 images/s against published figures (benchmarks/validate_vision.py prints the table), each row a `sizeup
roofline sizeup.examples.zoo:resnet50 --input Bx3x224x224 ...` command.

Targets from issue 18: batch 1 within 25% and large batch within 15%, median over the check rows
(the rows pytorch-eager's per-op overhead and the two occupancy tiles were derived from are labelled
'tuned' and left out)."""

import contextlib
import statistics
from dataclasses import replace

import pytest

pytest.importorskip("torch")

from tests.validation.bench import args, device, error, json_of, predict, rows, runner  # noqa: E402

ROWS = rows("vision_measurements.yaml")


def _batch(row) -> int:
    return int(args(row).input[0].split("x")[0])


@contextlib.contextmanager
def _without_occupancy():
    from sizeup.price import roofline

    kinds = roofline.OCCUPANCY_KINDS
    roofline.OCCUPANCY_KINDS = frozenset()
    try:
        with runner.state("no occupancy law"):
            yield
    finally:
        roofline.OCCUPANCY_KINDS = kinds


def _without(row) -> float:
    with _without_occupancy():
        return predict(row).typical


def test_rows_are_sourced_and_labelled():
    assert len(ROWS) >= 10
    assert all(r.source and r.get("retrieved") and r.value > 0 for r in ROWS)
    assert {r.role for r in ROWS} == {"tuned", "check"}
    assert sum(r.role == "check" for r in ROWS) >= 2 * sum(r.role == "tuned" for r in ROWS)


def test_eager_pytorch_check_rows_meet_the_targets():
    errors: dict[int, list[float]] = {1: [], 256: []}
    for row in ROWS:
        if row.role != "check" or not args(row).runtime.startswith("pytorch"):
            continue
        errors[1 if _batch(row) == 1 else 256].append(abs(error(row)))
        if _batch(row) == 1:  # at batch 1 the host's per-op time is most of the forward (the rest:
            overhead = json_of(row)["devices"][0]["overhead_bound_s"]  # convolutions too small to fill the SMs)
            assert overhead * predict(row).typical > 0.8
    assert len(errors[1]) >= 3 and len(errors[256]) >= 3
    assert statistics.median(errors[1]) <= 0.25
    assert statistics.median(errors[256]) <= 0.15


def test_tensorrt_at_batch_1_is_bound_by_sm_occupancy_on_volta():
    """The V100 rows the Volta tiles were fitted to land within the target with the law and 3-4x
    optimistic without it; on the held-out Jetson Xavier row (Volta, 8 SMs) the law moves the price toward
    the measurement (still 43% optimistic there). On Ada no tile is set (the L4 row fills its SMs): the
    law leaves it alone."""
    trt = [r for r in ROWS if args(r).runtime.startswith("tensorrt") and _batch(r) == 1]
    assert {r.role for r in trt} == {"tuned", "check"}
    for row in trt:
        with_law, without = predict(row).typical, _without(row)
        if device(row).architecture != "volta":
            assert with_law == without
            continue
        assert abs(with_law / row.value - 1) < abs(without / row.value - 1)
        if row.role == "tuned":
            assert abs(with_law / row.value - 1) <= 0.25 and without / row.value > 2.5


def test_the_occupancy_law_leaves_large_batch_alone():
    for row in ROWS:
        if _batch(row) >= 256:
            assert 0.98 <= predict(row).typical / _without(row) <= 1.0


def test_large_batch_check_rows_of_every_runtime_meet_the_target():
    """Issue 18: large batch within 15% median over the check rows, eager and compiled together."""
    errors = [abs(error(r)) for r in ROWS if r.role == "check" and _batch(r) >= 256]
    assert len(errors) >= 10 and statistics.median(errors) <= 0.15


def test_the_nchw_layout_cost_is_checked_against_timms_nchw_and_nhwc_pair():
    """CHECK (nothing fitted): the same harness and PyTorch build (pt240) in NCHW and channels-last on an RTX 3090
    differs by 43.6 ms per 1024 images; the price difference comes from the transform bytes alone
    (price/conv_algos.py) and must land within 1.5x of it."""
    nhwc = next(r for r in ROWS if r.id == "timm-rtx3090-amp-nhwc-b1024")
    nchw = replace(nhwc, command=nhwc.command.replace(args(nhwc).runtime, "pytorch-eager-amp"))
    assert args(nchw).runtime == "pytorch-eager-amp"
    priced = 1024 / predict(nchw).typical - 1024 / predict(nhwc).typical
    measured = 1024 / 3219.06 - 1024 / 3729.86
    assert measured / 1.5 < priced < measured * 1.5
