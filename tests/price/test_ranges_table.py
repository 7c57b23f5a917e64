"""The calibrated range table (price/ranges_table.py): the lookup's fallbacks, widening and wording, against small
tables written here, and the shipped table's provenance."""

import math

import pytest

from sizeup.price import ranges_table as rt

TABLE = {
    "min_rows": 15, "min_kind_rows": 8,
    "widening": {"device_class": {"factor": 1.2}, "engine": {"factor": 1.5}, "architecture": {"factor": 1.1},
                 "derived_peak": {"factor": 1.3}},
    "defaults": {"*": {"low": 0.5, "high": 2.0, "basis": "no row at all"},
                 "memory": {"low": 0.8, "high": 1.4, "basis": "borrowed"}},
    "cells": {"decode": {
        "*": {"*": {"rows": 40, "low": 0.7, "high": 1.3, "model_types": {"llama": 40}}},
        "llama.cpp": {"*": {"rows": 30, "low": 0.8, "high": 1.2, "model_types": {"llama": 30}},
                      "consumer": {"rows": 20, "low": 0.9, "high": 1.1, "model_types": {"llama": 18, "qwen2": 2}},
                      "apple": {"rows": 10, "low": 0.85, "high": 1.15, "model_types": {"llama": 10}}}}},
}


def test_a_cell_with_enough_rows_takes_its_own_ratios():
    b = rt.lookup(TABLE, "decode", engine="llama.cpp", device_class="consumer", model_type="qwen2")
    assert (b.scope, b.rows, b.arch_rows, b.low_ratio, b.high_ratio, b.widened) == ("cell", 20, 2, 0.9, 1.1, ())
    assert "20 published rows on llama.cpp, consumer GPUs (2 on this architecture)" in b.text


def test_fewer_rows_take_the_engine_then_the_kind_widened_on_the_log_ratios():
    b = rt.lookup(TABLE, "decode", engine="llama.cpp", device_class="apple", model_type="llama")
    assert b.scope == "engine" and b.rows == 10 and b.pooled_rows == 30
    assert b.low_ratio == pytest.approx(math.exp(math.log(0.8) * 1.2)) and b.high_ratio == pytest.approx(1.2 ** 1.2)
    new = rt.lookup(TABLE, "decode", engine="mlx", device_class="apple", model_type="llama")
    assert new.scope == "kind" and new.rows == 0 and "no row on mlx" in new.text
    assert new.low_ratio == pytest.approx(0.7 ** 1.5) and "too few rows on this engine" in new.widened[0]


def test_an_architecture_no_pooled_row_ran_and_a_derived_peak_widen_further():
    plain = rt.lookup(TABLE, "decode", engine="mlx", device_class="apple", model_type="llama")
    other = rt.lookup(TABLE, "decode", engine="mlx", device_class="apple", model_type="mamba")
    assert other.high_ratio == pytest.approx(1.3 ** (1.5 * 1.1)) and other.high_ratio > plain.high_ratio
    assert not rt.lookup(TABLE, "decode", engine="mlx", device_class="apple", derived_peak=True).widened[1:]
    assert rt.lookup(TABLE, "prefill", engine="x", device_class="apple", derived_peak=False).scope == "default"


def test_a_kind_without_rows_takes_its_stated_default():
    b = rt.lookup(TABLE, "memory", engine="vllm", device_class="datacenter")
    assert (b.scope, b.low_ratio, b.high_ratio) == ("default", 0.8, 1.4)
    assert "no row: derived" in b.text and "borrowed" in b.text
    assert rt.lookup(TABLE, "latency_percentile", engine="vllm", device_class="datacenter").low_ratio == 0.5


def test_a_time_takes_the_inverse_ratios_of_its_rate():
    b = rt.lookup(TABLE, "decode", engine="llama.cpp", device_class="consumer")
    r = rt.calibrated_rate(100.0, b)
    assert (r.low, r.typical) == (90.0, 100.0) and r.high == pytest.approx(110.0)
    t = rt.calibrated_time(0.01, b)
    assert t.low == pytest.approx(0.01 / 1.1) and t.high == pytest.approx(0.01 / 0.9)
    assert rt.budget("memory", "vllm", "datacenter").text.endswith("exact")


def test_engine_keys_drop_the_release_and_name_a_foreign_backend():
    from sizeup.hardware.catalog import load_catalog

    cat = load_catalog(include_user=False)
    assert rt.engine_key("vllm@0.10") == "vllm"
    assert rt.engine_key("llama.cpp", "vulkan", cat.device("rtx-3090")) == "llama.cpp/vulkan"
    assert rt.engine_key("llama.cpp", "cuda", cat.device("rtx-3090")) == "llama.cpp"
    assert rt.training_key(None, "lora") == "default/lora" and rt.training_key("trl", "qlora") == "trl/qlora"


def test_a_derived_peak_is_the_16_bit_one():
    from sizeup.hardware.catalog import load_catalog

    cat = load_catalog(include_user=False)
    assert not rt.peak_derived(cat.device("rtx-4090"))  # only its tf32 / int4 are derived
    assert rt.peak_derived(cat.device("rtx-3080-ti")) and rt.peak_derived(cat.device("apple-m3-max"))


def test_the_shipped_table_names_its_command_and_covers_every_kind_it_is_asked_for():
    info = rt.table_info()
    assert info["command"] == "python benchmarks/fit_ranges.py --write" and info["generated"] and info["rows"] > 500
    for kind in rt.KINDS:
        b = rt.backing(kind, engine="an-engine-never-measured", device_class="consumer")
        assert b.low_ratio <= 1 <= b.high_ratio and b.scope in ("kind", "default"), kind


def test_an_engine_without_rows_is_never_narrower_than_the_kinds_default():
    """Another engine's memory rows (an MLX fix made them tight) must not narrow a case nothing backs: an engine with
    too few rows takes the kind's pool widened, and at least the kind's stated default."""
    table = {**TABLE, "cells": {"memory": {"*": {"*": {"rows": 11, "low": 0.95, "high": 1.05,
                                                         "model_types": {"llama": 11}}},
                                           "mlx": {"apple": {"rows": 11, "low": 0.95, "high": 1.05}}}}}
    b = rt.lookup(table, "memory", engine="llama.cpp", device_class="consumer", model_type="llama")
    assert b.scope == "kind" and (b.low_ratio, b.high_ratio) == (0.8, 1.4)
    assert "no narrower than the table's default for the kind" in b.text and "borrowed" in b.text
    wide = {**table, "cells": {"memory": {"*": {"*": {"rows": 11, "low": 0.6, "high": 1.9,
                                                        "model_types": {"llama": 11}}}}}}
    b = rt.lookup(wide, "memory", engine="llama.cpp", device_class="consumer", model_type="llama")
    assert b.high_ratio == pytest.approx(1.9 ** 1.5)  # a wider pool keeps its own widened range
    assert not any("no narrower" in w for w in b.widened)


def test_a_training_key_names_the_multi_gpu_regime():
    assert rt.training_key("trl", "qlora", 1) == "trl/qlora"
    assert rt.training_key("trl", "qlora", 4) == "trl/qlora/multi-gpu"


def test_a_framework_without_rows_borrows_the_default_frameworks_range_widened():
    own = rt.backing("training_memory", engine="trl/qlora", device_class="datacenter", model_type="llama")
    b = rt.borrowed("training_memory", engine="unsloth/qlora", source="trl/qlora", why="the default framework's",
                    device_class="datacenter", model_type="llama")
    assert own.scope == "cell" and b is not None and b.scope == "borrowed" and b.rows == 0
    factor = float(rt._table()["widening"]["engine"]["factor"])
    assert abs(b.high_ratio - own.high_ratio ** factor) < 1e-9 and abs(b.low_ratio - own.low_ratio ** factor) < 1e-9
    assert b.text.startswith("training and fine-tuning memory: no row on unsloth/qlora")
    assert f"from {own.pooled_rows} rows of trl/qlora (the default framework's)" in b.text
    assert rt.borrowed("training_memory", engine="x/qlora", source="nobody/qlora", why="", device_class="datacenter") \
        is None


def test_a_derived_peak_takes_its_kind_and_engines_own_factor_else_the_widest():
    """The derived-peak factor is calibrated per (kind, engine): a pair with its own factor takes it, any other pair
    the table's (the widest calibrated), so that one pair's many rows cannot narrow another pair's range."""
    pairs = {"prefill": {"llama.cpp": {"factor": 1.0, "held_out": 140}}}
    table = {**TABLE, "widening": {**TABLE["widening"], "derived_peak": {"factor": 1.8, "pairs": pairs}},
             "cells": {"prefill": {"*": {"*": {"rows": 40, "low": 0.7, "high": 1.3, "model_types": {"llama": 40}}},
                                   "llama.cpp": {"apple": {"rows": 20, "low": 0.8, "high": 1.2,
                                                           "model_types": {"llama": 20}}},
                                   "mlx": {"apple": {"rows": 20, "low": 0.8, "high": 1.2,
                                                     "model_types": {"llama": 20}}}}}}
    own = rt.lookup(table, "prefill", engine="llama.cpp", device_class="apple", model_type="llama", derived_peak=True)
    assert (own.low_ratio, own.high_ratio, own.widened) == (0.8, 1.2, ())
    other = rt.lookup(table, "prefill", engine="mlx", device_class="apple", model_type="llama", derived_peak=True)
    assert other.high_ratio == pytest.approx(1.2 ** 1.8) and "x1.8 (the device's 16-bit" in other.widened[0]


FAMILIES = {**TABLE, "families": {"traced_model": {"tensorrt": "fusing", "onnxruntime": "fusing",
                                                   "pytorch-eager": "op-by-op"}},
            "cells": {"traced_model": {
                "*": {"*": {"rows": 40, "low": 0.3, "high": 1.3}},
                "family:fusing": {"*": {"rows": 25, "low": 0.4, "high": 1.2}},
                "family:op-by-op": {"*": {"rows": 10, "low": 0.8, "high": 5.0}},
                "tensorrt": {"*": {"rows": 20, "low": 0.5, "high": 1.1}}}}}


def test_a_runtime_with_too_few_rows_takes_its_familys_pool_widened_before_every_engines():
    ort = rt.lookup(FAMILIES, "traced_model", engine="onnxruntime", device_class="datacenter")
    assert (ort.scope, ort.pooled_rows) == ("family", 25)
    assert ort.low_ratio == pytest.approx(0.4 ** 1.5) and ort.high_ratio == pytest.approx(1.2 ** 1.5)
    assert "its runtime family, fusing" in ort.widened[0] and "from 25 rows of its runtime family" in ort.text
    own = rt.lookup(FAMILIES, "traced_model", engine="tensorrt", device_class="datacenter")
    assert (own.scope, own.pooled_rows) == ("engine", 20)
    # a family with too few rows of its own, a runtime of no family and a table without families: every engine's
    for engine, table in (("pytorch-eager", FAMILIES), ("generic", FAMILIES),
                          ("onnxruntime", {k: v for k, v in FAMILIES.items() if k != "families"})):
        b = rt.lookup(table, "traced_model", engine=engine, device_class="datacenter")
        assert (b.scope, b.pooled_rows, b.low_ratio) == ("kind", 40, pytest.approx(0.3 ** 1.5))
