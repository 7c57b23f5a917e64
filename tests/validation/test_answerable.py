"""benchmarks/answerable.py: a row is answered when its command runs and its metric has a figure, refused with the
command's own one-line error otherwise; gathered rows (`argv:`) are read as runner rows (`command:`) are."""

from tests.validation.bench import load_benchmark

ANSWERABLE = load_benchmark("answerable")


def _row(command: str, key: str = "command", metric: str = "decode_tokens_per_s") -> dict:
    return {"id": "x", "role": "check", key: command, "metric": metric, "value": 1.0, "source": "s"}


def test_a_command_that_runs_is_answered_in_either_layout():
    command = "sizeup estimate llama-3.2-1b --device rtx-4090 --engine llama.cpp --quant q4_k_m"
    assert ANSWERABLE.verdict(_row(command), "f.yaml") == ("answered", "")
    assert ANSWERABLE.verdict(_row(command, key="argv"), "f.yaml") == ("answered", "")


def test_a_refused_command_gives_its_one_line_error():
    kind, why = ANSWERABLE.verdict(_row("sizeup estimate llama-3.2-1b --device rtx-4090 --quant nope"), "f.yaml")
    assert kind == "refused" and why.startswith("unknown quantization 'nope'")


def test_a_metric_the_command_does_not_give_is_no_figure():
    row = _row("sizeup estimate llama-3.2-1b --device rtx-4090 --engine llama.cpp", metric="output_tokens_per_s_at_load")
    assert ANSWERABLE.verdict(row, "f.yaml") == ("no figure", "output_tokens_per_s_at_load: the estimate gives none")
