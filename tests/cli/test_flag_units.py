"""Every flag of every command that takes a duration, a size or a bandwidth reads it with a unit, by
the one parser in sizeup.units (issue 19: `--ttft-p95 500ms` was "invalid float value")."""

from __future__ import annotations

import argparse
import re

import pytest

from sizeup.cli.main import build_parser, main

TIME = re.compile(r"duration|interval|timeout|budget|latency|ttft|tpot|e2e|deadline|wait")
SIZE = re.compile(r"memory|_cap|bytes|vram")
BANDWIDTH = re.compile(r"bandwidth|gbps")
SAMPLES = {"s": ("500ms", 0.5), "bytes": ("24GB", 24e9), "Gbit/s": ("1.5TB/s", 12_000.0)}


def _options(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, (*path, name))
        elif action.option_strings:
            yield path, action


def _flags_of_kind(pattern: re.Pattern) -> list[tuple[str, argparse.Action]]:
    return [(" ".join(path), a) for path, a in _options(build_parser("*")) if pattern.search(a.dest)]


@pytest.mark.parametrize(("pattern", "unit"), [(TIME, "s"), (SIZE, "bytes"), (BANDWIDTH, "Gbit/s")])
def test_every_duration_size_and_bandwidth_flag_takes_units(pattern, unit):
    flags = _flags_of_kind(pattern)
    assert flags, f"no flag matched {pattern.pattern}: the walk over the parsers found nothing"
    text, value = SAMPLES[unit]
    for command, action in flags:
        checks = getattr(action.type, "checks", None)
        assert checks is not None and checks["unit"] == unit, \
            f"sizeup {command} {action.option_strings[0]}: not read with the {unit} unit parser"
        assert action.type(text) == pytest.approx(value), f"sizeup {command} {action.option_strings[0]} {text}"


def test_the_walk_sees_the_known_unit_flags():
    names = {(cmd, a.option_strings[0]) for cmd, a in _flags_of_kind(TIME) + _flags_of_kind(SIZE)}
    for expected in [("plan", "--ttft-p95"), ("plan", "--tpot-p95"), ("measure", "--latency-target"),
                     ("measure", "--budget"), ("measure", "--memory-cap"), ("load", "--duration"),
                     ("load", "--timeout"), ("watch", "--interval"), ("watch", "--duration")]:
        assert expected in names


def test_every_command_has_json():
    missing = []
    full = build_parser("*")
    sub = next(a for a in full._actions if isinstance(a, argparse._SubParsersAction))

    def leaves(parser, path):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            yield path, parser
            return
        for name, child in subs[0].choices.items():
            yield from leaves(child, (*path, name))

    for name, parser in sub.choices.items():
        for path, leaf in leaves(parser, (name,)):
            if path[0] in ("ui", "mcp"):  # servers, not answers
                continue
            if not any("--json" in a.option_strings for a in leaf._actions):
                missing.append(" ".join(path))
    assert not missing, f"commands without --json: {missing}"


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert re.fullmatch(r"sizeup \d+\.\d+\.\d+\S*\n", capsys.readouterr().out)


def test_plan_takes_latency_with_a_unit_and_refuses_nonsense(capsys):
    assert main(["plan", "llama-3.1-8b", "--users", "50", "--ttft-p95", "500ms", "--json"]) == 0
    capsys.readouterr()
    assert main(["plan", "llama-3.1-8b", "--ttft-p95", "soon"]) == 1
    err = capsys.readouterr().err
    assert "--ttft-p95" in err and "soon" in err and "\n" == err[-1] and err.count("\n") == 1
