"""The loader beside the GPU: rates at N workers (measured, interpolated, extended, capped by the CPU), the GPU's
wait, the fewest workers that keep up, and another CPU."""

import pytest

from sizeup.errors import ConfigError
from sizeup.workload.input_pipeline import (LoaderRates, clock_scale, compare_pipeline, loader_rate_at,
                                            rates_from_points)


def _rates(cpu=None):
    return LoaderRates(by_workers={0: 90.0, 1: 100.0, 2: 180.0, 4: 320.0}, cores=8, cpu_s_per_sample=cpu)


def test_measured_interpolated_and_extended():
    r = _rates()
    assert loader_rate_at(r, 2, 8)[0] == 180 and "measured" in loader_rate_at(r, 2, 8)[1]
    assert loader_rate_at(r, 3, 8)[0] == pytest.approx(250)  # between 2 and 4
    assert loader_rate_at(r, 6, 8)[0] == pytest.approx(480)  # 80 per worker, as measured at 4
    assert loader_rate_at(r, 0, 8)[0] == 90


def test_the_cpu_caps_the_workers():
    r = _rates(cpu=0.01)  # 10 ms of CPU per sample: 7 worker cores give at most 700 samples/s
    rate, how = loader_rate_at(r, 16, 8)
    assert rate == pytest.approx(700) and "cores run out" in how


def test_another_machine_scales_one_workers_rate():
    r = _rates(cpu=0.01)
    rate, how = loader_rate_at(r, 4, cores=32, scale=1.5)
    assert rate == pytest.approx(4 * 100 * 1.5) and how == "4 x one worker's rate"
    assert loader_rate_at(r, 64, cores=32, scale=1.5)[0] == pytest.approx(31 * 1.5 / 0.01)


def test_input_bound_and_the_workers_that_fix_it():
    v = compare_pipeline(_rates(), 400.0, 0)
    assert v.input_bound and v.gpu_wait == pytest.approx(1 - 90 / 400)
    assert v.workers_needed == 5  # 5 x 80 = 400
    assert "GPU waits 78%" in v.summary and "5 workers keep up" in v.summary


def test_not_fixable_on_these_cores():
    v = compare_pipeline(_rates(cpu=0.01), 2000.0, 2)
    assert v.workers_needed is None and "at most 700 samples/s" in v.summary and v.gpu_wait == pytest.approx(0.91)


def test_keeps_up():
    v = compare_pipeline(_rates(), 150.0, 4)
    assert not v.input_bound and v.gpu_wait == 0 and v.workers_needed == 2


def test_bad_inputs():
    with pytest.raises(ConfigError):
        LoaderRates(by_workers={}, cores=2)
    with pytest.raises(ConfigError):
        compare_pipeline(_rates(), 0.0, 1)


def test_clock_scale():
    class Cpu:
        def __init__(self, ghz, name="x"):
            self.boost_clock_hz, self.name = ghz * 1e9, name

    assert clock_scale(Cpu(2.0), Cpu(3.0)) == (1.5, None)
    assert clock_scale(None, Cpu(3.0))[1].startswith("the measuring CPU")
    assert clock_scale(Cpu(2.0), None) == (1.0, None)


def test_rates_from_points_prefers_the_in_process_cpu():
    r = rates_from_points([{"workers": 0, "samples_per_s": 50, "cpu_s_per_sample": 0.004},
                           {"workers": 2, "samples_per_s": 90, "cpu_s_per_sample": 0.006}], cores=4)
    assert r.cpu_s_per_sample == 0.004 and r.by_workers == {0: 50.0, 2: 90.0}
