"""The three-way fit verdict (workload/device_fit.py fit_verdict): the memory range's high end against the usable
memory the typical figure is compared with."""

from types import SimpleNamespace

from sizeup.units import GIB
from sizeup.workload.device_fit import DOES_NOT_FIT, FITS, MAY_NOT_FIT, fit_verdict
from sizeup.ranges import Range


def _estimate(total_gib, high_gib, usable_gib, fits=None):
    usable = Range(usable_gib * GIB * 0.95, usable_gib * GIB, usable_gib * GIB * 1.01)
    memory = SimpleNamespace(fits=total_gib <= usable_gib if fits is None else fits, total_bytes=total_gib * GIB,
                             usable_bytes=usable)
    ranges = None if high_gib is None else SimpleNamespace(
        memory_total_bytes=Range(total_gib * GIB, total_gib * GIB, high_gib * GIB))
    return SimpleNamespace(memory=memory, ranges=ranges)


def test_high_end_over_usable_may_not_fit():
    # the figures of `sizeup estimate qwen3-8b --device rtx-3080-10gb --engine llama.cpp --quant q8_0`
    v = fit_verdict(_estimate(8.16, 10.8, 9.56))
    assert v.verdict == MAY_NOT_FIT and not v.comfortable
    assert "10.8 GiB" in v.why and "9.56 GiB usable" in v.why


def test_whole_range_inside_fits_and_typical_over_does_not():
    assert fit_verdict(_estimate(13.7, 20.3, 24.0)).verdict == FITS
    assert fit_verdict(_estimate(13.7, 20.3, 24.0)).comfortable
    assert fit_verdict(_estimate(12.0, 14.0, 9.0)).verdict == DOES_NOT_FIT


def test_without_a_range_the_typical_figure_decides():
    assert fit_verdict(_estimate(8.0, None, 9.0)).verdict == FITS


def test_training_takes_the_same_rule_from_its_memory_range():
    """workload/device_fit.py training_fit_verdict: micro-batch 1 at the typical total, then total_range's high end."""
    from sizeup.workload.device_fit import training_fit_verdict

    def training(total_gib, high_gib, usable_gib, max_mb=1):
        usable = Range(usable_gib * GIB, usable_gib * GIB, usable_gib * GIB)
        memory = SimpleNamespace(fits=total_gib <= usable_gib, usable_bytes=usable,
                                 total_range=Range(total_gib * GIB, total_gib * GIB, high_gib * GIB))
        return SimpleNamespace(memory=memory, max_micro_batch=max_mb)

    assert training_fit_verdict(training(20.0, 29.6, 23.5)).verdict == MAY_NOT_FIT
    assert "29.6 GiB" in training_fit_verdict(training(20.0, 29.6, 23.5)).why
    assert training_fit_verdict(training(12.0, 17.8, 23.5)).verdict == FITS
    assert training_fit_verdict(training(12.0, 17.8, 23.5, max_mb=0)).verdict == DOES_NOT_FIT
