"""Fuzz of the scenario YAML (hypothesis, fixed seed): the shipped examples mutated — wrong types, NaN and
±Infinity, negative, huge, fractional counts, missing and unknown keys, lists repeated thousands of
times, other encodings and binary bytes. Reading a scenario gives a Scenario or one ConfigError line;
`sizeup plan` exits 0, 1 or 2 with no traceback, one line on stderr when it fails, in under 5 s of CPU;
the resident memory stays within 500 MiB."""

import contextlib
import copy
import io
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sizeup.cli.main import main
from tests.fuzz.limits import CPU_LIMIT_S, bounded
from sizeup.errors import ConfigError
from sizeup.plan.scenario import Scenario, load_scenario

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))
BASES = {p.name: yaml.safe_load(p.read_text()) for p in EXAMPLES}
RAW = {p.name: p.read_bytes() for p in EXAMPLES}
# The planner runs in full on what survives validation: the fast examples only (a vision plan traces torch).
PLANNED = [n for n in BASES if n not in ("vision-inspection.yaml", "api-70b-p99-ttft.yaml")]

HOSTILE = st.one_of(
    st.sampled_from([float("nan"), float("inf"), float("-inf"), -1, 0, -0.5, 0.5, 1.5, 10**30, 2**64 - 1,
                     10**400, 1e308, -1e308, "many", "", "nan", "1e9", "500ms", True, False, None, [], {}, [1, 2],
                     {"mean": float("nan")}, {"a": 1}, "x" * 5000, "\x07bell", "l4", ["l4"] * 3]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-2**70, max_value=2**70),
    st.text(max_size=12),
)


def _paths(node, prefix=()):
    """Every key path (dict keys and list indexes) in the scenario, leaves and mappings alike."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node[:5]):
            out += _paths(v, (*prefix, i))
    return out


def _set(root, path, value):
    node = root
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value


_DELETE = object()


@st.composite
def mutated_scenario(draw, names=tuple(BASES)):
    """(name, YAML bytes) of an example with one to three mutations."""
    name = draw(st.sampled_from(names))
    data = copy.deepcopy(BASES[name])
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(data)
        kind = draw(st.sampled_from(["value", "value", "value", "delete", "repeat", "unknown", "wrap"]))
        if not paths or kind == "unknown":
            data[draw(st.sampled_from(["colour", "traffic", "sla", "constraints", "budget", 7]))] = draw(HOSTILE)
            continue
        path = draw(st.sampled_from(paths))
        if kind == "value":
            _set(data, path, draw(HOSTILE))
        elif kind == "delete" and not isinstance(path[-1], int):
            _set(data, path, _DELETE)
        elif kind == "repeat":
            lists = [p for p in paths if isinstance(_get(data, p), list)]
            if not lists:
                continue
            target = draw(st.sampled_from(lists))
            items = _get(data, target) or ["l4"]
            small = all(isinstance(v, str) and len(v) < 40 for v in items) and len(items) < 10
            times = draw(st.sampled_from([2, 300, 20_000])) if small else 2  # at most a 1 MB file
            _set(data, target, items * times)
        elif kind == "wrap":
            _set(data, path, draw(st.sampled_from([[_get(data, path)], {"value": _get(data, path)}])))
    return name, yaml.safe_dump(data, allow_unicode=True).encode()


@st.composite
def scaled_scenario(draw, names=tuple(PLANNED)):
    """(name, YAML bytes) of an example with one or two numbers scaled to extremes that may still be valid,
    so that the planner itself runs on them (a million users, a microsecond SLA, a 10**6-token prompt)."""
    name = draw(st.sampled_from(names))
    data = copy.deepcopy(BASES[name])
    numbers = [p for p in _paths(data)
               if isinstance(_get(data, p), (int, float)) and not isinstance(_get(data, p), bool)]
    for _ in range(draw(st.integers(1, 2))):
        path = draw(st.sampled_from(numbers))
        value = _get(data, path) * draw(st.sampled_from([0, 1e-6, 1e-3, 0.5, 2, 1000, 10**6, 10**9]))
        _set(data, path, int(value) if isinstance(_get(data, path), int) and float(value).is_integer() else value)
    return name, yaml.safe_dump(data).encode()


def _get(root, path):
    node = root
    for key in path:
        node = node[key] if isinstance(node, dict) else node[key] if isinstance(node, list) else None
    return node


@st.composite
def mangled_bytes(draw, names=tuple(RAW)):
    """(name, bytes) of an example file spoiled as bytes: binary inserted or instead, truncated, another
    encoding, a BOM, deep nesting."""
    name = draw(st.sampled_from(names))
    raw = RAW[name]
    kind = draw(st.sampled_from(["binary", "insert", "truncate", "latin-1", "utf-16", "bom", "nest", "tabs"]))
    if kind == "binary":
        return name, draw(st.binary(max_size=4000))
    if kind == "insert":
        at = draw(st.integers(0, len(raw)))
        return name, raw[:at] + draw(st.binary(min_size=1, max_size=64)) + raw[at:]
    if kind == "truncate":
        return name, raw[:draw(st.integers(0, len(raw)))]
    if kind == "latin-1":
        return name, ("# caf\u00e9 \u00fcber\n" + raw.decode()).encode("latin-1")
    if kind == "utf-16":
        return name, raw.decode().encode("utf-16")
    if kind == "bom":
        return name, b"\xef\xbb\xbf" + raw
    if kind == "nest":
        depth = draw(st.sampled_from([10, 70, 5000, 100_000]))
        opener = draw(st.sampled_from(["[", "{a: ", "- "]))
        return name, raw + f"\nextra: {opener * depth}".encode()
    return name, raw.replace(b"  ", b"\t")


def _run_plan(path: Path) -> tuple[int, str, float]:
    if not _warmed:  # one-time imports and data loads are not the first example's cost
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            main(["plan", str(EXAMPLES[0].with_name(PLANNED[0])), "--format", "json"])
        _warmed.append(True)
    out, err = io.StringIO(), io.StringIO()
    t0 = time.process_time()
    with bounded(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["plan", str(path), "--format", "json"])
    return code, err.getvalue(), time.process_time() - t0


_warmed: list[bool] = []


def _check_cli(code: int, err: str, cpu_s: float) -> None:
    assert code in (0, 1, 2), err
    assert "Traceback" not in err, err
    if code == 1:
        assert err.count("\n") == 1 and err.startswith("sizeup: error: "), err
        assert "bug in sizeup" not in err, err
    assert cpu_s < CPU_LIMIT_S, f"{cpu_s:.1f} s of CPU"


def _check_load(path: Path) -> None:
    t0 = time.process_time()
    with bounded():
        try:
            assert isinstance(load_scenario(path), Scenario)
        except ConfigError as e:
            message = str(e)
            assert message and "\n" not in message and len(message) < 600, message
    assert time.process_time() - t0 < CPU_LIMIT_S


@settings(derandomize=True, max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=mutated_scenario())
def test_mutated_scenarios_read_or_fail_in_one_line(tmp_path_factory, case):
    name, data = case
    path = tmp_path_factory.mktemp("scenario") / name
    path.write_bytes(data)
    _check_load(path)


@settings(derandomize=True, max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=mangled_bytes())
def test_spoiled_bytes_read_or_fail_in_one_line(tmp_path_factory, case):
    name, data = case
    path = tmp_path_factory.mktemp("scenario") / name
    path.write_bytes(data)
    _check_load(path)


@settings(derandomize=True, max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=st.one_of(mutated_scenario(names=tuple(PLANNED)), mangled_bytes(names=tuple(PLANNED))))
def test_plan_on_a_hostile_scenario_exits_cleanly(tmp_path_factory, case):
    name, data = case
    path = tmp_path_factory.mktemp("scenario") / name
    path.write_bytes(data)
    _check_cli(*_run_plan(path))


@settings(derandomize=True, max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=scaled_scenario())
def test_plan_on_extreme_but_valid_numbers_exits_cleanly(tmp_path_factory, case):
    name, data = case
    path = tmp_path_factory.mktemp("scenario") / name
    path.write_bytes(data)
    _check_cli(*_run_plan(path))


@pytest.mark.parametrize("name", sorted(BASES))
def test_every_example_still_reads(name):
    assert isinstance(load_scenario(EXAMPLES[sorted(BASES).index(name)]), Scenario)
