"""How the UI writes numbers (ui/filters.py): units, rounding, a dash for what is unknown, never a Python value."""

from __future__ import annotations

import math

import pytest

from sizeup.ui.filters import FILTERS


@pytest.mark.parametrize("name, value, text", [
    ("bytes", 16200634269, "15.1 GiB"),
    ("secs", 0.0312, "31.2 ms"),
    ("secs", 0, "0 s"),
    ("num", 1234.567, "1,234.6"),
    ("num", 7.2449, "7.24"),
    ("count", 8030261248, "8.03 B"),
    ("count", 131072, "131,072"),
    ("count", 999_950_000, "1 B"),
    ("usd", 0.2712, "$0.27"),
    ("usd", 12345.6, "$12,346"),
    ("pct", 0.31, "31%"),
    ("pct", -0.17, "-17%"),
    ("when", "2026-12-05T02:24:42.8+00:00", "2026-12-05 02:24 UTC"),
    ("label", "kv_cache_bytes", "KV cache"),
    ("label", "grad_accumulation", "grad accumulation"),
    ("text", 128.0, "128"),
    ("text", 0.123456789012, "0.123"),  # three significant digits under 10
    ("text", [1, 2, 4], "1, 2, 4"),
    ("text", {"max_tokens": 512}, "max tokens: 512"),
    ("text", True, "yes"),
    ("target", "guidellm:/home/me/runs/bench.json", "guidellm: bench.json"),
    ("target", "sizeup.examples.zoo:mlp_conv_net", "sizeup.examples.zoo:mlp_conv_net"),
])
def test_each_kind_of_value_is_written_for_a_reader(name, value, text):
    assert FILTERS[name](value) == text


@pytest.mark.parametrize("name", ["bytes", "secs", "num", "count", "usd", "pct", "when", "text", "target"])
@pytest.mark.parametrize("missing", [None, math.nan, ""])
def test_an_unknown_value_is_a_dash(name, missing):
    assert FILTERS[name](missing) == "–"
