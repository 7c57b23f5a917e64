"""`sizeup fit` and `sizeup models` as text: the table a person reads, and one-line errors."""

from sizeup.cli.main import main


def test_fit_prints_the_fastest_rows_with_engine_format_and_assumptions(capsys):
    assert main(["fit", "4060 ti 16gb", "--limit", "5"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("chat on NVIDIA GeForce RTX 4060 Ti 16GB:") and "(the 5 fastest shown)" in lines[0]
    rows = lines[3:8]
    assert all(("llama.cpp" in r or "vllm" in r) for r in rows)
    assert "do not fit" in out and "assumption: llama.cpp: llama.cpp (GGUF)" in out


def test_fit_with_nothing_that_fits_exits_2(capsys):
    assert main(["fit", "raspberry-pi-5", "--models", "llama-3.1-70b"]) == 2
    assert "do not fit (1): llama-3.1-70b" in capsys.readouterr().out


def test_fit_refuses_a_device_and_engine_it_cannot_price(capsys):
    assert main(["fit", "tpu-v5e"]) == 1
    err = capsys.readouterr().err
    assert "tpu-v5e runs none of the serving engines" in err and err.count("\n") == 1


def test_models_lists_and_searches(capsys):
    assert main(["models", "mixtral"]) == 0
    out = capsys.readouterr().out
    assert "mixtral-8x7b" in out and "active" in out and "llama" not in out
    assert main(["models", "no-such-model-anywhere"]) == 0
    assert "no preset matches" in capsys.readouterr().out
