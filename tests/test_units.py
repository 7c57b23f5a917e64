"""Numbers typed by users: parse_number, check_number and the number_flag argparse type."""

import argparse
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sizeup.errors import ConfigError
from sizeup.units import GIB, check_number, number_flag, parse_duration_s, parse_number


@pytest.mark.parametrize("text, kwargs, value", [
    ("1e9", {"integer": True}, 10**9),
    ("2B", {"integer": True, "unit": "count"}, 2 * 10**9),
    ("500M", {"unit": "count"}, 5e8),
    ("500ms", {"unit": "s"}, 0.5),
    ("2min", {"unit": "s"}, 120.0),
    ("1.5", {"unit": "s"}, 1.5),
    ("25GB/s", {"unit": "Gbit/s"}, 200.0),
    ("400Gbps", {"unit": "Gbit/s"}, 400.0),
    ("16GiB", {"unit": "bytes", "integer": True}, 16 * GIB),
    ("1_000", {"integer": True}, 1000),
    (" +7 ", {"integer": True}, 7),
    ("1" + "0" * 40, {"integer": True}, 10**40),
])
def test_numbers_with_units(text, kwargs, value):
    assert parse_number(text, what="--x", **kwargs) == value


@pytest.mark.parametrize("text, kwargs, message", [
    ("nan", {}, "--x nan: not a finite number"),
    ("-inf", {"minimum": 0}, "--x -inf: not a finite number"),
    ("Infinity", {}, "not a finite number"),
    ("1e400", {}, "--x 1e400: too large"),
    ("1.5", {"integer": True, "minimum": 1}, "--x 1.5: expected a positive integer"),
    ("-100", {"above": 0, "unit": "Gbit/s"}, "--x -100: expected a positive number"),
    ("0", {"integer": True, "minimum": 1, "maximum": 8}, "expected a positive integer <= 8"),
    ("9", {"integer": True, "minimum": 1, "maximum": 8}, "expected a positive integer <= 8"),
    ("1", {"minimum": 0, "below": 1}, "expected a number >= 0 and < 1"),
    ("5 parsecs", {"unit": "s"}, "unknown unit 'parsecs'"),
    ("two", {}, "--x two: expected a number"),
    ("", {}, "expected a number"),
    ("x" * 500, {}, "(500 characters)"),
])
def test_refused_numbers_name_the_value_and_the_bound(text, kwargs, message):
    with pytest.raises(ConfigError) as info:
        parse_number(text, what="--x", **kwargs)
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("value, message", [
    (True, "expected a whole number"), ("12", "expected a whole number"), (float("nan"), "not a finite number"),
    (float("inf"), "not a finite number"), (1.5, "expected a whole number"), (10**400, "<= 100"),
])
def test_check_number_refuses_what_yaml_can_hold(value, message):
    with pytest.raises(ConfigError, match=message):
        check_number(value, what="key", integer=True, minimum=0, maximum=100)


def test_number_flag_in_a_plain_parser():
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument("--n", type=number_flag(integer=True, minimum=1))
    assert parser.parse_args(["--n", "3"]).n == 3
    with pytest.raises(argparse.ArgumentError, match="--n.*not a finite number"):
        parser.parse_args(["--n", "nan"])
    with pytest.raises(argparse.ArgumentError, match="invalid int value: 'two'"):
        parser.parse_args(["--n", "two"])


def test_durations_keep_their_message():
    assert parse_duration_s("1h") == 3600.0 and parse_duration_s("200ms") == 0.2
    with pytest.raises(ConfigError, match="invalid duration 'soon'"):
        parse_duration_s("soon")
    with pytest.raises(ConfigError, match="invalid duration 'nan'"):
        parse_duration_s("nan")


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2**80, 2**80), st.text(max_size=20)))
def test_a_flag_value_is_a_finite_bounded_number_or_a_config_error(value):
    text = repr(value) if isinstance(value, float) else str(value)
    try:
        parsed = parse_number(text, what="--x", minimum=-1e6, maximum=1e6)
    except ConfigError as e:
        assert "\n" not in str(e)
        return
    assert math.isfinite(parsed) and -1e6 <= parsed <= 1e6
    if isinstance(value, float):
        assert parsed == value
