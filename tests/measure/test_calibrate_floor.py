"""The per-op overhead measured on the floor (the forward on an empty batch) and the rates fitted around it, on
synthetic ledgers with a known truth: weights streamed at a memory factor below 1 are what a fit without the floor
calls per-op overhead; with the floor, overhead, compute and memory factors all come back."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sizeup.errors import MeasureError
from sizeup.measure.calibrate import local_device, profile_efficiency
from sizeup.measure.calibrate_fit import fit_profile, floor_overhead
from sizeup.measure.floor import floor_pinned, floor_seconds
from sizeup.price.roofline import price
from tests.measure.test_calibrate_fit import BATCHES, cnn

BENCH = {"matmul_flops_per_s": 100e9, "copy_bytes_per_s": 20e9, "device": "cpu", "dtype": "fp32"}
DEVICE = local_device(BENCH)
KERNELS = 81


def truth(overhead: float, compute: float, memory: float) -> dict[str, float]:
    return {"tensor_matmul": compute, "tensor_conv": compute, "tensor_attention": compute, "vector": compute,
            "memory": memory, "overhead_s": overhead}


def points(values: dict[str, float]) -> list:
    eff = profile_efficiency(values, 0.0)
    return [(cnn(b), price(cnn(b), DEVICE, eff).total_s.typical) for b in BATCHES]


def test_with_the_floor_overhead_compute_and_memory_factors_come_back():
    values = truth(10e-6, 0.6, 0.3)
    fit = fit_profile(DEVICE, points(values), batches=BATCHES, floors=[(KERNELS, KERNELS * 10e-6)])
    assert fit.overhead_source == "measured"
    assert fit.values["overhead_s"] == pytest.approx(10e-6, rel=1e-9)
    assert fit.values["memory"] == pytest.approx(0.3, rel=0.02)
    assert fit.values["tensor_conv"] == pytest.approx(0.6, rel=0.02)
    assert fit.residual_median < 0.01
    assert not [n for n in fit.notes if "fitted, not measured" in n]


def test_without_the_floor_the_weights_streamed_every_forward_pass_for_overhead():
    """The classifier's 40 MB at 0.3 x 20 GB/s (6.7 ms a forward, at every batch) lie on the batch line's
    intercept with the 81 x 10 us of dispatch: a fit without the floor cannot tell them apart."""
    fit = fit_profile(DEVICE, points(truth(10e-6, 0.6, 0.3)), batches=BATCHES)
    assert fit.values["memory"] == 1.0
    assert fit.values["overhead_s"] > 5 * 10e-6
    assert fit.values["overhead_s"] * KERNELS == pytest.approx(KERNELS * 10e-6 + 40e6 / (0.3 * 20e9) - 40e6 / 20e9,
                                                               rel=0.1)


@settings(max_examples=15, deadline=None)
@given(overhead=st.floats(2e-6, 60e-6), compute=st.floats(0.1, 1.0), memory=st.floats(0.1, 1.0))
def test_any_known_truth_is_recovered_within_tolerance(overhead, compute, memory):
    fit = fit_profile(DEVICE, points(truth(overhead, compute, memory)), batches=BATCHES,
                      floors=[(KERNELS, KERNELS * overhead)])
    assert fit.values["overhead_s"] == pytest.approx(overhead, rel=1e-9)
    assert fit.values["tensor_conv"] == pytest.approx(compute, rel=0.03)
    assert fit.values["memory"] == pytest.approx(memory, rel=0.03)


@settings(max_examples=25, deadline=None)
@given(o=st.floats(1e-6, 1e-3), kernels=st.lists(st.integers(1, 2000), min_size=1, max_size=5),
       noise=st.floats(0.0, 0.1))
def test_floor_overhead_is_the_host_time_per_kernel(o, kernels, noise):
    exact, se = floor_overhead([(k, k * o) for k in kernels])
    assert exact == pytest.approx(o, rel=1e-9)
    assert se is None if len(kernels) == 1 else se == pytest.approx(0, abs=1e-9 * o)
    # floors that only add time (a busy machine): the estimate lies between the truth and the truth + noise
    est, _ = floor_overhead([(k, k * o * (1 + noise * (i % 2))) for i, k in enumerate(kernels)])
    assert o * (1 - 1e-9) <= est <= o * (1 + noise) * (1 + 1e-9)


def test_floor_readings():
    floor = {"min_s": 2e-3, "median_s": 2.1e-3, "cpu_min_s": 1.9e-3, "repetitions": 20}
    assert floor_seconds(floor, "cpu-min") == 1.9e-3 and floor_seconds(floor, "min") == 2e-3
    assert floor_seconds({**floor, "cpu_min_s": None}, "cpu-min") == 2e-3  # no CPU times: the wall minimum
    assert floor_seconds({"error": "RuntimeError"}, "min") is None and floor_seconds(None, "min") is None
    assert floor_pinned(floor) and not floor_pinned({**floor, "repetitions": 3})
    assert not floor_pinned({**floor, "median_s": 3e-3}) and not floor_pinned(None)
    # CPU times, where recorded, decide: a busy machine stretches the wall times, not the thread's CPU time
    timed = {**floor, "median_s": 3e-3, "cpu_median_s": 2e-3}
    assert floor_pinned(timed) and not floor_pinned({**timed, "cpu_median_s": 2.5e-3})


def test_bad_floors_are_refused():
    with pytest.raises(MeasureError, match="expected \\(kernels > 0, seconds > 0\\)"):
        fit_profile(DEVICE, points(truth(1e-5, 0.5, 0.5)), batches=BATCHES, floors=[(KERNELS, math.nan)])


def test_small_batches_on_slower_kernels_give_a_size_curve_the_profile_prices_with():
    """Small batches (<= 8) at a third of the large batches' rate: with the floor, the fit keeps the large batches'
    compute factor and a curve whose small-op end is that third; priced on it, the small batches come back."""
    slow, fast = truth(10e-6, 0.2, 0.5), truth(10e-6, 0.6, 0.5)
    obs = [(cnn(b), price(cnn(b), DEVICE, profile_efficiency(slow if b <= 8 else fast, 0.0)).total_s.typical)
           for b in BATCHES]
    fit = fit_profile(DEVICE, obs, batches=BATCHES, floors=[(KERNELS, KERNELS * 10e-6)])
    assert fit.values["tensor_conv"] == pytest.approx(0.6, rel=0.03)
    (lo, frac), (hi, one) = fit.size_curve
    assert lo < hi and one == 1.0 and frac == pytest.approx(1 / 3, rel=0.05)
    assert any("fitted curve" in n for n in fit.notes)
    batch1 = price(cnn(1), DEVICE, profile_efficiency(fit.values, 0.0, fit.size_curve)).total_s.typical
    assert batch1 == pytest.approx(obs[0][1], rel=0.05)


def test_one_rate_at_every_batch_gives_no_curve():
    fit = fit_profile(DEVICE, points(truth(10e-6, 0.6, 0.5)), batches=BATCHES, floors=[(KERNELS, KERNELS * 10e-6)])
    assert fit.size_curve is None
