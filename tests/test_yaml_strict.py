"""sizeup.yaml_strict: YAML 1.2 core scalars, unique keys, bounded aliases — and every built-in data file
reads exactly as PyYAML's safe loader reads it (nothing shipped relied on YAML 1.1 quirks)."""

import math
import time
from pathlib import Path

import pytest
import yaml

from sizeup.errors import CatalogError, ConfigError
from sizeup.yaml_strict import MAX_EXPANDED_NODES, load_yaml

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("text, value", [
    ("1:30", "1:30"),          # YAML 1.1: 90 (base 60)
    ("-1:30:00", "-1:30:00"),  # YAML 1.1: -5400
    ("010", 10),               # YAML 1.1: 8 (octal)
    ("0o17", 15), ("0x1F", 31), ("+5", 5), ("-0", 0),
    ("1_000", "1_000"),        # YAML 1.1: 1000
    ("0b11", "0b11"),          # YAML 1.1: 3
    ("1.5", 1.5), ("1e3", 1000.0), (".5", 0.5), ("1.", 1.0), ("-2E-3", -0.002),
    (".inf", math.inf), ("-.Inf", -math.inf),
    ("1,000", "1,000"), ("1:30.5", "1:30.5"),
    ("true", True), ("False", False), ("TRUE", True),
    ("yes", "yes"), ("no", "no"), ("on", "on"), ("off", "off"), ("NO", "NO"), ("y", "y"),  # YAML 1.1: booleans
    ("~", None), ("null", None), ("", None),
    ("=", "="),
])
def test_yaml_12_core_scalars(text, value):
    assert load_yaml(f"v: {text}\n", "t.yaml")["v"] == value


def test_nan_is_a_float():
    assert math.isnan(load_yaml("v: .nan", "t.yaml")["v"])


def test_dates_stay_timestamps_as_the_catalog_reads_them():
    import datetime

    assert load_yaml("retrieved: 2026-12-04", "t.yaml")["retrieved"] == datetime.date(2026, 12, 4)


@pytest.mark.parametrize("text, message", [
    ("users: 1\nname: x\nusers: 2\n", "t.yaml: line 3: key 'users' is given twice (first on line 1); give each key once"),
    ("traffic:\n  users: 1\n  users: 1\n", "t.yaml: line 3: key 'users' is given twice (first on line 2)"),
    ("a: {x: 1, x: 2}\n", "t.yaml: line 1: key 'x' is given twice (first on line 1)"),
    ("- {a: 1}\n- {b: 2, b: 3}\n", "t.yaml: line 2: key 'b' is given twice (first on line 2)"),
    ("v: !!int 1:30\n", "t.yaml: not valid YAML (line 1: '1:30' is not a YAML 1.2 integer)"),
    ("v: !!bool yes\n", "t.yaml: not valid YAML (line 1: 'yes' is not a YAML 1.2 boolean)"),
    ("v: !!float 1_0\n", "t.yaml: not valid YAML (line 1: '1_0' is not a YAML 1.2 float)"),
    ("a: &a [*a]\n", "t.yaml: a YAML alias inside the node it names (a recursive document)"),
    ("a: [unclosed\n", "t.yaml: not valid YAML (line 2: "),
    ("- " * 70 + "x\n", "t.yaml: YAML nested up to 72 levels deep; expected at most 64"),
])
def test_refusals_are_one_line_naming_the_line(text, message):
    with pytest.raises(ConfigError) as info:
        load_yaml(text, "t.yaml")
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_the_callers_error_class_is_raised():
    with pytest.raises(CatalogError, match="given twice"):
        load_yaml("a: 1\na: 2\n", "d.yaml", CatalogError)


def test_merge_keys_are_not_duplicates():
    data = load_yaml("base: &b {users: 1, name: x}\nuse: {<<: *b, users: 2}\n", "t.yaml")
    assert data["use"] == {"users": 2, "name": "x"}


def test_an_alias_bomb_is_refused_before_it_is_expanded():
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 10):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*{'a' if i == 1 else f'l{i - 1}'}"] * 9) + "]")
    start = time.process_time()
    with pytest.raises(ConfigError, match=r"aliases expand to [\d,]+ YAML nodes; expected at most 1,000,000"):
        load_yaml("\n".join(lines) + "\n", "lol.yaml")
    assert time.process_time() - start < 2
    small = "a: &a [1, 2]\nb: [*a, *a]\n"
    assert load_yaml(small, "t.yaml")["b"] == [[1, 2], [1, 2]]
    assert MAX_EXPANDED_NODES == 1_000_000


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def test_every_shipped_yaml_reads_as_before():
    files = sorted([*(ROOT / "src" / "sizeup" / "data").rglob("*.yaml"), *(ROOT / "examples").glob("*.yaml")])
    assert len(files) > 100
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert _same(load_yaml(text, str(path), CatalogError), yaml.load(text, Loader=yaml.SafeLoader)), path
