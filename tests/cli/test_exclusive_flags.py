"""Flags that would silently drop each other (issue 27.4): every such pair of every command is refused in one
exact line naming both values, exit code 1, before anything runs."""

import pytest

from sizeup.cli.main import main


def one_line_refusal(argv: list[str], capsys) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 1, (argv, err)
    assert err.count("\n") == 1 and err.startswith("sizeup: error: "), err
    assert "Traceback" not in err and "bug in sizeup" not in err
    assert "error" in out or out == ""  # --json: one JSON error object at most
    return err.removeprefix("sizeup: error: ").rstrip("\n")


@pytest.mark.parametrize("argv, line", [
    (["plan", "llama-3.1-8b", "--users", "20", "--rps", "5"],
     "--users 20 and --rps 5 cannot be given together: each sets the request rate; give one"),
    (["plan", "llama-3.1-8b", "--json", "--format", "md"],
     "--json and --format 'md' cannot be given together: --json is --format json; give one"),
    (["train", "llama-3.2-1b", "--device", "h100", "--method", "lora", "--compare", "full,lora"],
     "--method 'lora' and --compare 'full,lora' cannot be given together: --compare prices each method it lists; "
     "give one"),
    (["train", "llama-3.2-1b", "--device", "h100", "--tokens", "2e9", "--epochs", "2"],
     "--tokens 2e+09 and --epochs 2 cannot be given together: --tokens is the run's length; --epochs × "
     "--dataset-tokens is another"),
    (["train", "llama-3.2-1b", "--device", "h100", "--tokens", "5000", "--dataset-tokens", "1e6"],
     "--tokens 5000 and --dataset-tokens 1e+06 cannot be given together: --tokens is the run's length; --epochs × "
     "--dataset-tokens is another"),
    (["measure", "no/such.py:build", "--collectives"],
     "--collectives and target 'no/such.py:build' cannot be given together: --collectives measures the links, not a "
     "model"),
    (["measure", "no/such.py:build", "--backends", "eager,compile", "--train"],
     "--backends 'eager,compile' and --train cannot be given together: --backends compares inference backends"),
    (["load", "http://127.0.0.1:9/", "--api", "http", "--rate", "1", "--prompts", "p.txt"],
     "--api 'http' and --prompts 'p.txt' cannot be given together: a plain HTTP endpoint is sent a GET, without "
     "prompts"),
    (["load", "http://127.0.0.1:9/", "--api", "http", "--rate", "1", "--max-tokens", "8"],
     "--api 'http' and --max-tokens 8 cannot be given together: a plain HTTP endpoint is sent a GET, without a token "
     "count"),
    (["load", "http://127.0.0.1:9/", "--rate", "1", "--concurrency", "2"],
     "argument --concurrency: not allowed with argument --rate (see 'sizeup load --help')"),
    (["flops", "no/such.py:build", "--backward", "--train"],
     "argument --train: not allowed with argument --backward (see 'sizeup flops --help')"),
    (["runs", "export", "1", "--format", "csv", "--json"],
     "argument --json: not allowed with argument --format (see 'sizeup runs export --help')"),
    (["estimate", "llama-3.2-1b", "--device", "h100", "--devices", "consumer"],
     "--device h100 and --devices consumer: give one device or one class"),
    (["watch", "--pid", "1", "--duration", "1s", "--", "sleep", "1"],
     "give --pid PID or -- COMMAND ..., not both and not neither"),
])
def test_exclusive_pairs_are_refused(argv, line, capsys):
    assert one_line_refusal(argv, capsys) == line


@pytest.mark.parametrize("flag", [["--users", "50"], ["--rps", "2"], ["--prompt", "100"], ["--task", "api"],
                                  ["--engine", "llama.cpp"], ["--device", "l4"], ["--ttft-p95", "1s"]])
def test_quick_plan_flags_with_a_scenario_file(tmp_path, capsys, flag):
    path = tmp_path / "s.yaml"
    path.write_text("model: llama-3.1-8b\ntask: api\ntraffic: {users: 20}\n")
    line = one_line_refusal(["plan", str(path), *flag], capsys)
    assert line.startswith(f"{flag[0]} ") and line.endswith(f": a flag of the quick plan (sizeup plan MODEL …), not "
                                                            f"read with the scenario file '{path}'; set it in the file")


def test_flags_one_at_a_time_still_work(capsys):
    assert main(["plan", "llama-3.2-1b", "--rps", "2", "--device", "l4", "--json"]) in (0, 2)
    assert main(["plan", "llama-3.2-1b", "--users", "20", "--device", "l4", "--format", "json"]) in (0, 2)
    capsys.readouterr()
    assert main(["plan", "llama-3.1-8b", "--task", "batch", "--engine", "vllm", "--json"]) == 1  # no job: its own line
    assert "--task batch needs --tokens N" in capsys.readouterr().err
