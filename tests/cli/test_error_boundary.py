"""The CLI's one error boundary, and a parser that imports only the command being run."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sizeup.cli import main as cli_main
from sizeup.cli.main import COMMANDS, build_parser, main
from sizeup.errors import ConfigError, describe_error

ROOT = Path(__file__).resolve().parents[2]


def _fail_with(monkeypatch, exc: BaseException) -> None:
    """Make `sizeup estimate` raise `exc` from inside the command."""
    from sizeup.cli.commands import estimate

    def boom(args):
        raise exc

    monkeypatch.setattr(estimate, "run", boom)
    real = estimate.register

    def register(sub):
        real(sub)
        sub.choices["estimate"].set_defaults(func=boom)

    monkeypatch.setattr(estimate, "register", register)


def test_a_bug_is_one_line_that_says_so_and_how_to_see_the_traceback(monkeypatch, capsys):
    monkeypatch.delenv("SIZEUP_DEBUG", raising=False)
    _fail_with(monkeypatch, ZeroDivisionError("division by zero"))
    assert main(["estimate", "llama-3.1-8b", "--device", "4090"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("sizeup: error: this is a bug in sizeup in sizeup estimate: ZeroDivisionError: "
                          "division by zero")
    assert "--debug" in err and "SIZEUP_DEBUG=1" in err


@pytest.mark.parametrize("how", ["flag-first", "flag-last", "env"])
def test_debug_prints_the_traceback(monkeypatch, capsys, how):
    monkeypatch.delenv("SIZEUP_DEBUG", raising=False)
    _fail_with(monkeypatch, KeyError("k"))
    argv = ["estimate", "llama-3.1-8b", "--device", "4090"]
    if how == "env":
        monkeypatch.setenv("SIZEUP_DEBUG", "1")
    argv = ["--debug", *argv] if how == "flag-first" else [*argv, "--debug"] if how == "flag-last" else argv
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "KeyError" in err
    assert err.splitlines()[-1].startswith("sizeup: error: this is a bug in sizeup")


@pytest.mark.parametrize("exc, words", [
    (RecursionError("maximum recursion depth exceeded"), "nested too deeply"),
    (MemoryError(), "out of memory"),
    (OverflowError("int too large to convert to float"), "number in the input is too large"),
    (UnicodeDecodeError("utf-8", b"\xe9", 0, 1, "invalid continuation byte"), "not UTF-8"),
    (ValueError("cannot convert float NaN to integer"), "bug in sizeup"),
])
def test_input_limits_and_value_errors_are_one_line(monkeypatch, capsys, exc, words):
    monkeypatch.delenv("SIZEUP_DEBUG", raising=False)
    _fail_with(monkeypatch, exc)
    assert main(["estimate", "llama-3.1-8b", "--device", "4090"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and type(exc).__name__ in err and "Traceback" not in err


def test_interrupt_and_broken_pipe(monkeypatch, capsys):
    _fail_with(monkeypatch, KeyboardInterrupt())
    assert main(["estimate", "llama-3.1-8b", "--device", "4090"]) == 130
    assert capsys.readouterr().err == "sizeup: interrupted\n"
    _fail_with(monkeypatch, BrokenPipeError())
    assert main(["estimate", "llama-3.1-8b", "--device", "4090"]) == 0


def test_describe_error_for_the_web_api():
    user = describe_error(ConfigError("--batch -2: expected a positive integer\nsecond line"))
    assert (user.message, user.exit_code, user.http_status, user.bug) == (
        "--batch -2: expected a positive integer", 1, 400, False)
    bug = describe_error(TypeError("unsupported operand"), context="GET /api/estimate")
    assert bug.bug and bug.http_status == 500 and "GET /api/estimate" in bug.message
    assert "\n" not in describe_error(ValueError("a\x00b\nc" + "x" * 5000)).message


def test_help_lists_every_command_without_importing_them(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert all(name in out for name in COMMANDS)


def test_the_table_says_what_each_module_registers():
    full = build_parser("*")
    sub = next(a for a in full._actions if a.dest == "command")
    registered = {a.dest: a.help for a in sub._choices_actions}
    assert registered == {name: help_text for name, (_, help_text) in COMMANDS.items()}


def test_only_the_command_being_run_is_imported():
    code = ("import sys; from sizeup.cli.main import build_parser; build_parser(sys.argv[1]); "
            "print(sorted(m for m in sys.modules if m.startswith('sizeup.cli.commands.') or m in "
            "('numpy', 'torch', 'rich', 'openpyxl', 'matplotlib', 'yaml')))")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    loaded = {}
    for command in ("estimate", "plan", "flops", "--help"):
        out = subprocess.run([sys.executable, "-c", code, command], capture_output=True, text=True, env=env,
                             check=True, timeout=60).stdout
        loaded[command] = set(json.loads(out.replace("'", '"')))
    assert loaded["--help"] == set()
    assert loaded["estimate"] == {"sizeup.cli.commands.estimate", "sizeup.cli.commands.hw"}
    assert loaded["plan"] == {"sizeup.cli.commands.plan", "sizeup.cli.commands.hw"}
    assert loaded["flops"] == {"sizeup.cli.commands.flops"}


def test_numeric_flags_name_the_flag_and_the_bound(capsys):
    assert main(["estimate", "llama-3.1-8b", "--device", "4090", "--batch", "nan"]) == 1
    err = capsys.readouterr().err
    assert err == "sizeup: error: --batch nan: not a finite number; expected a positive integer <= 10,000,000\n"


def test_run_guarded_is_the_same_boundary(capsys):
    assert cli_main.run_guarded(lambda: 1 / 0, context="a script") == 1
    assert "bug in sizeup in a script: ZeroDivisionError" in capsys.readouterr().err


def test_a_double_dash_given_as_a_value_is_refused(capsys):  # found by tests/fuzz/test_fuzz_flags.py
    assert main(["estimate", "llama-3.2-1b", "--device", "rtx-4090", "--gpus=--"]) == 1
    assert capsys.readouterr().err == "sizeup: error: --gpus=--: '--' is not a value for --gpus (see 'sizeup --help')\n"


def test_with_json_an_error_is_also_one_json_object_on_stdout(capsys):
    assert main(["estimate", "llama-3.1-8b", "--device", "no-such-card", "--json"]) == 1
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "no-such-card" in captured.err
    error = json.loads(captured.out)["error"]
    assert "no-such-card" in error["message"] and error["exit_code"] == 1 and error["command"] == "sizeup estimate"


def test_without_json_an_error_leaves_stdout_empty(capsys):
    assert main(["estimate", "llama-3.1-8b", "--device", "no-such-card"]) == 1
    assert capsys.readouterr().out == ""


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("argv", [["estimate", "llama-3.2-1b", "--device", "h100"], ["hw", "list", "--json"]])
def test_stdout_that_cannot_be_written_is_one_line_not_a_bug(argv):
    """`sizeup … > /dev/full`: one error line on stderr, nothing more at exit (no 'Exception ignored')."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "sizeup", *argv], stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=60, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]
                                                                                 / "src")})
    assert proc.returncode == 1
    assert proc.stderr == "sizeup: error: cannot write to <stdout> (No space left on device): expected somewhere the " \
                          "output fits\n"


@pytest.mark.parametrize("value", ["0", "99999", "1" + "0" * 400])
def test_calibrate_threads_is_bounded_like_measure_threads(capsys, value):
    assert main(["calibrate", "--device-type", "h100", f"--threads={value}"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--threads" in err and "bug" not in err
