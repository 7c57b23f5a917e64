"""Quick plans of every task: a job's length is `--tokens N`; an edge plan's board is `--device NAME` with its
per-token latency `--tpot-p95`; a flag the task does not read, or one it needs and lacks, is one line naming it."""

import json

import pytest

from sizeup.cli.main import main


def _json(capsys, *argv) -> dict:
    assert main(["plan", "llama-3.2-1b", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("task", ["pretrain", "finetune", "batch"])
def test_tokens_sets_the_jobs_length(capsys, task):
    small = _json(capsys, "--task", task, "--tokens", "1e8", "--device", "h100")
    large = _json(capsys, "--task", task, "--tokens", "1e9", "--device", "h100")
    assert small["headline"]["period"] == "job" and small["meets"]
    assert large["headline"]["cost_usd"] > small["headline"]["cost_usd"]


@pytest.mark.parametrize("argv, message", [
    (["--task", "pretrain"], "--task pretrain needs --tokens N: the tokens to train on"),
    (["--task", "batch"], "--task batch needs --tokens N: the output tokens to generate"),
    (["--task", "chat", "--users", "5", "--tokens", "1e6"], "--tokens 1,000,000: a job's length, read by --task batch"),
    (["--task", "edge", "--tpot-p95", "100ms"], "--task edge plans one board: give it as --device NAME"),
    (["--task", "edge", "--device", "jetson-orin-nano-8gb", "--device", "l4", "--tpot-p95", "100ms"],
     "--task edge plans one board: give it as --device NAME (e.g. jetson-orin-nano), not 2"),
    (["--task", "edge", "--device", "jetson-orin-nano-8gb"], "--task edge needs --tpot-p95 S"),
    (["--task", "pretrain", "--tokens", "0"], "--tokens 0"),
])
def test_quick_job_and_edge_flags_are_one_line(capsys, argv, message):
    assert main(["plan", "llama-3.2-1b", *argv]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_edge_quick_plan_is_the_named_board(capsys):
    """The quick edge plan is the scenario file's plan: the same board, the same per-token target."""
    quick = _json(capsys, "--task", "edge", "--device", "jetson-orin-nano-8gb", "--tpot-p95", "100ms")
    assert quick["headline"]["device_id"].startswith("jetson-orin-nano-8gb")
    assert quick["headline"]["sla"]["tpot"]["target"] == pytest.approx(0.1)


def test_tokens_beside_a_scenario_file_is_refused(capsys, tmp_path):
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "team-lora-finetune.yaml"
    assert main(["plan", str(example), "--tokens", "1e9"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("sizeup: error: --tokens") and "a flag of the quick plan" in err
