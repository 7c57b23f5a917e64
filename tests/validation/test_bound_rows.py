"""Bound rows (rows.py `bound`): a source's value that only bounds what it measured ("the longest context that fits
in 24 GB": the run's peak is at most 24 GB) is scored by side, has no error of its own, and sets no range."""

import dataclasses

import pytest

from tests.validation.bench import _rows, runner, summary
from validation import ranges_fit

ROW = ("- {id: a, source: s, role: check, command: 'sizeup train llama-3.1-8b --device h100-sxm-80gb --method qlora', "
       "metric: nvml_used_bytes, value: 100, reference: r, retrieved: '2026-12-05'%s}\n")


def _result(value: float, low: float, typical: float, high: float, *, bound: str | None = None,
            metric: str = "nvml_used_bytes", source: str = "s", kind: str = "training_memory") -> summary.Result:
    extra = {"bound": bound} if bound else {}
    row = _rows.Row(id=f"{source}-{value}-{typical}-{bound}", file="f.yaml", source=source, role="check",
                    command="sizeup train x", metric=metric, value=value, extra=extra)
    ctx = runner.Context(kind=kind, engine="trl/qlora", device_class="datacenter", device="h100-sxm-80gb",
                         model_type="llama", derived_peak=False)
    return summary.Result(row=row, context=ctx, predicted=runner.Prediction(typical, low, high))


def test_a_row_file_states_a_bound_as_upper_or_lower(tmp_path):
    path = tmp_path / "b_measurements.yaml"
    path.write_text(ROW % ", bound: upper")
    assert _rows.load_file(path)[0].bound == "upper"
    path = tmp_path / "c_measurements.yaml"  # load_file caches by path
    path.write_text(ROW % ", bound: max")
    with pytest.raises(ValueError, match="bound 'max', expected upper or lower"):
        _rows.load_file(path)


def test_an_upper_bound_is_inside_when_the_range_reaches_below_it():
    assert _result(100, 90, 110, 150, bound="upper").inside  # low under the bound: a peak of <= 100 is in range
    assert not _result(100, 101, 110, 150, bound="upper").inside  # the whole range above what fit
    assert _result(100, 50, 80, 95, bound="upper").inside  # all below: right side, however far
    assert not _result(100, 50, 80, 95).inside  # the same numbers as a measured value: outside
    assert _result(100, 50, 80, 95, bound="upper").correct_side
    assert not _result(100, 90, 110, 150, bound="upper").correct_side
    assert _result(100, 50, 120, 150, bound="lower").inside and not _result(100, 50, 80, 95, bound="lower").inside


def test_bound_rows_leave_the_errors_and_count_in_inside():
    rows = [_result(100, 90, 110, 120), _result(100, 105, 130, 140), _result(100, 50, 60, 70, bound="upper")]
    s = summary.Stats.of_results(rows)
    assert s.rows == 3 and s.bounds == 1
    assert s.median == pytest.approx(0.2)  # |+10%| and |+30%|; the bound's -40% is not an error
    assert s.inside == pytest.approx(2 / 3)  # the first and the bound (by side); the second is above its range
    assert summary.Stats.of_results(rows[2:]).cells()[1:4] == ["-", "-", "-"]


def test_a_bound_sets_no_quantile_and_is_judged_by_side():
    measured = [_result(100, 90, 100 / q, 120, source=f"m{i}") for i, q in enumerate([0.9, 1.0, 1.1, 1.2] * 5)]
    far = _result(100, 10, 20, 30, bound="upper", source="b")  # ratio 5: an upper bound on the true ratio
    with_bound = ranges_fit.cells(measured + [far])["training_memory"]["trl/qlora"]["datacenter"]
    assert with_bound == ranges_fit.cells(measured)["training_memory"]["trl/qlora"]["datacenter"]
    assert with_bound["rows"] == 20 and with_bound["high"] < 5
    assert ranges_fit.within(far, 0.9, 1.2)  # the true ratio is at most 5: a range up to 1.2 can hold it
    under = _result(100, 10, 200, 300, bound="upper", source="b")  # ratio 0.5: the true one is lower still
    assert not ranges_fit.within(under, 0.9, 1.2)


def test_a_bound_on_a_time_flips_on_the_ratio():
    # a step time of at most 1 s predicted at 2 s: the rate's ratio 2 / 1 is a lower bound on the true one
    r = _result(1.0, 1.5, 2.0, 2.5, bound="upper", metric="step_time_s", kind="training_step")
    assert ranges_fit.ratio(r) == pytest.approx(2.0) and ranges_fit.ratio_bound(r) == "lower"
    assert ranges_fit.within(r, 0.5, 2.5) and not ranges_fit.within(r, 0.5, 1.5)


def test_the_row_report_leaves_bounds_out_of_the_errors():
    from validation import row_report

    rows = [_result(100, 90, 110, 120, source="a"), _result(100, 50, 60, 70, bound="upper", source="b")]
    ins = {r.row.id: r for r in rows}
    judged = {r.row.id: (r, True, 1.3) for r in rows}
    text = row_report.summary_table(rows, ins, judged, judged, lambda r: r.context.engine)
    line = next(x for x in text.splitlines() if x.startswith("| all "))
    assert "| 2 (1) | 10.0% |" in line and line.endswith("| 100% | 100% |")  # only the measured row's +10%


def test_a_traced_runtime_pools_with_its_family_and_a_graph_replay_has_none():
    families = ranges_fit.runtime_families()
    assert families["tensorrt"] == families["onnxruntime"] == families["torch-compile"] == "fusing"
    assert families["pytorch-eager"] == families["pytorch-eager-amp"] == "op-by-op" and "cuda-graphs" not in families
    rs = []
    for engine, typical in (("tensorrt", 2.0), ("onnxruntime", 1.0), ("pytorch-eager", 1.0)):
        r = _result(100.0, 50.0, 100.0 * typical, 150.0, metric="images_per_s", kind="traced_model")
        rs.append(dataclasses.replace(r, context=dataclasses.replace(r.context, engine=engine)))
    cells = ranges_fit.cells(rs, engine_families=ranges_fit.families())["traced_model"]
    assert cells["family:fusing"]["*"]["rows"] == 2 and cells["family:fusing"]["*"]["low"] == 0.5
    assert cells["family:op-by-op"]["*"]["rows"] == 1 and cells["*"]["*"]["rows"] == 3
    assert "family:fusing" not in ranges_fit.cells(rs, engine_families={})["traced_model"]
