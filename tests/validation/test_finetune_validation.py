"""Published fine-tuning measurements priced through `sizeup train` command lines (benchmarks/validate_finetune.py):
issue 29's targets, fine-tuning memory median |error| <= 12% and speed <= 15%, in sample and leave-one-source-out
(the allocator reserve, the one table fitted on these sources, set again without the row's source)."""

import statistics

import pytest

from tests.validation.bench import _rows, load_benchmark, rows, runner, summary

BENCH = load_benchmark("validate_finetune")
ROWS = rows(*BENCH.FILES)
SOURCES = {k: v for f in _rows.files_named(*BENCH.FILES) for k, v in _rows.sources(f).items()}


def test_every_row_is_a_sourced_sizeup_train_command():
    assert len(ROWS) >= 100 and {r.source for r in ROWS} <= set(SOURCES)
    for r in ROWS:
        assert r.argv[:2] == ["sizeup", "train"] and r.value > 0
        assert r.get("reference") and r.get("retrieved") and r.metric in BENCH.MEMORY + BENCH.SPEED
        assert set(r.extra) <= {"reference", "retrieved", "cuda_context_bytes", "bound"}  # only the command reaches the estimate


@pytest.fixture(scope="module")
def results():
    from validation import tables

    with_loso = []
    for source in SOURCES:
        members = [r for r in ROWS if r.source == source]
        with tables.allocator_without(source), runner.state(f"finetune loso {source}"):
            with_loso += summary.evaluate(members)
    return {"in sample": summary.evaluate(ROWS), "leave one source out": with_loso}


@pytest.mark.parametrize("fit", ["in sample", "leave one source out"])
def test_fine_tuning_memory_median_error_within_12_percent(results, fit):
    errors = [abs(r.error) for r in summary.measured(results[fit]) if r.row.metric in BENCH.MEMORY]
    assert len(errors) >= 100 and statistics.median(errors) <= 0.12


@pytest.mark.parametrize("fit", ["in sample", "leave one source out"])
def test_fine_tuning_speed_median_error_within_15_percent(results, fit):
    errors = [abs(r.error) for r in results[fit] if r.row.metric in BENCH.SPEED]
    assert len(errors) >= 100 and statistics.median(errors) <= 0.15


def test_no_source_is_off_by_more_than_a_fifth_on_memory(results):
    for source in SOURCES:
        errors = [abs(r.error) for r in summary.measured(results["leave one source out"])
                  if r.row.source == source and r.row.metric in BENCH.MEMORY]
        assert not errors or statistics.median(errors) <= 0.2, source


def test_single_gpu_lora_and_qlora_rows_are_check_rows_of_two_sources():
    single = [r for r in ROWS if r.source in ("llama-factory-wiki", "unsloth-docs-context")]
    assert {r.role for r in single} == {"check"}  # no figure was fitted or hand-set from them
    assert len(single) >= 24 and all("--gpus" not in r.argv for r in single)  # one GPU each


def test_the_single_gpu_measured_rows_are_within_12_percent(results):
    errors = [abs(r.error) for r in results["in sample"] if r.row.source == "llama-factory-wiki"]
    assert len(errors) >= 12 and statistics.median(errors) <= 0.12


def test_the_max_context_rows_are_upper_bounds_scored_by_side(results):
    # Unsloth's "longest context that fits in X GB": the peak was at most X (the source gives no search step)
    bounds = [r for r in results["in sample"] if r.row.source == "unsloth-docs-context"]
    assert len(bounds) >= 12 and {r.bound for r in bounds} == {"upper"}
    assert summary.Stats.of_results(bounds).bounds == len(bounds)
    # the range reaches at or below the VRAM: 12 of 16 at the 2026-12-05 refit; the other 4 (8B HF+FA2 at 12 and 16 GB,
    # 70B Unsloth 48 GB, 70B HF+FA2 80 GB) are predicted 3-8% above the VRAM their source trained in, and trl/qlora's
    # range (set by measured rows, none below its typical) has no room under them: an over-prediction at the edge
    assert sum(r.inside for r in bounds) >= 0.75 * len(bounds)
    assert sum(r.correct_side for r in bounds) >= 0.6 * len(bounds)  # the typical itself fits in the VRAM
