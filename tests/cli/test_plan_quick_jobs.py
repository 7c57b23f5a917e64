"""Quick plans of every task: a job's length is `--tokens N`; an edge plan's board is `--device NAME` with its
per-token latency `--tpot-p95`; a flag the task does not read, or one it needs and lacks, is one line naming it."""

import json
import re

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
    (["--task", "batch", "--tokens", "1e8", "--users", "5"], "--users 5: users sending requests, read by --task chat, "
                                                            "api; --task batch does not read it"),
    (["--task", "batch", "--tokens", "1e8", "--rps", "2"], "--rps 2: a request rate, read by --task chat, api"),
    (["--task", "batch", "--tokens", "1e8", "--ttft-p95", "500ms"], "--ttft-p95 0.5 s: a time-to-first-token target"),
    (["--task", "finetune", "--tokens", "1e8", "--prompt", "100"], "--prompt 100: prompt tokens per request, read by "
                                                                  "--task chat, api, batch, edge; --task finetune"),
    (["--task", "pretrain", "--tokens", "1e8", "--engine", "vllm"], "--engine vllm: a serving engine, read by --task "
                                                                   "chat, api, batch, edge; --task pretrain"),
    (["--task", "edge", "--device", "jetson-orin-nano-8gb", "--tpot-p95", "100ms", "--users", "3"],
     "--users 3: users sending requests, read by --task chat, api; --task edge does not read it"),
    (["--task", "edge", "--device", "jetson-orin-nano-8gb", "--tpot-p95", "100ms", "--ttft-p95", "1"],
     "--ttft-p95 1 s: a time-to-first-token target, read by --task chat, api; --task edge does not read it"),
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


def test_batch_prompt_and_output_set_the_tokens_per_request(capsys):
    """A batch job's --prompt / --output are its requests' lengths (they used to be ignored: the plan was the
    same with or without them): a long prompt with few output tokens costs more per output token."""
    base = ["--task", "batch", "--tokens", "1e8", "--device", "h100"]
    default = _json(capsys, *base)
    long_prompt = _json(capsys, *base, "--prompt", "4000", "--output", "100")
    assert "prompt 512, output 256 per request" in " ".join(default["assumptions"])
    assert "prompt 4000, output 100 per request" in " ".join(long_prompt["assumptions"])
    assert long_prompt["headline"]["cost_usd"] > 2 * default["headline"]["cost_usd"]
    cost = next(s for s in default["sections"] if s["title"] == "Cost budget")
    regions = [c["note"] for c in cost["cells"] if c["key"].startswith("cheapest_")]
    assert regions and all(re.search(r", [a-z1-]+ per job$", n) for n in regions), regions


def test_edge_prompt_and_output_set_the_boards_context(capsys):
    """An edge plan's --prompt / --output are its context (they used to be ignored): the KV cache of a longer
    context needs more memory, and the recipe's llama-server context follows."""
    base = ["--task", "edge", "--device", "jetson-orin-nano-8gb", "--tpot-p95", "100ms"]
    default = _json(capsys, *base)
    longer = _json(capsys, *base, "--prompt", "4000", "--output", "1000")
    assert longer["plan"]["chosen"]["memory_bytes"] > default["plan"]["chosen"]["memory_bytes"]
    recipe = next(s for s in longer["sections"] if s["title"] == "Recipe")
    assert "--ctx-size 5000" in json.dumps(recipe)


def test_batch_and_edge_engine_is_the_one_named(capsys):
    """--engine names a batch job's or an edge board's engine (it used to be read for chat/api only)."""
    batch = _json(capsys, "--task", "batch", "--tokens", "1e8", "--device", "h100", "--engine", "sglang")
    assert batch["headline"]["engine"].startswith("sglang")


@pytest.mark.parametrize("argv", [["--task", "batch", "--tokens", "1e8", "--device", "h100"],
                                  ["--task", "finetune", "--tokens", "1e8", "--device", "h100"],
                                  ["--task", "edge", "--device", "jetson-orin-nano-8gb", "--tpot-p95", "100ms"]],
                         ids=["batch", "finetune", "edge"])
def test_every_quick_task_renders_as_html_with_its_roofline(capsys, tmp_path, argv):
    """A batch job's HTML sheet (and the UI's plan page, which draws the same charts) crashed drawing its roofline:
    a batch plan without a traffic section recorded no context for the decode step."""
    out = tmp_path / "sheet.html"
    assert main(["plan", "llama-3.2-1b", *argv, "--format", "html", "--out", str(out)]) == 0
    html = out.read_text()
    assert "roofline: " in html and "roofline not drawn" not in html
