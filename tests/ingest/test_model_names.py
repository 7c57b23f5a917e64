"""A model name that can be neither a preset nor a path: one line, at once (issue 27: a long name crashed the path
lookup with 'File name too long', and a long one fed the closest-name search)."""

import time

import pytest

from sizeup.cli.main import main
from sizeup.errors import ConfigError, ResolveError
from sizeup.ingest.load import MAX_MODEL_CHARS, load_model


@pytest.mark.parametrize("name, error, says", [
    ("llama-3.2-1" + "b" * 300, ResolveError, "(a preset name, a Hugging Face id of a preset, or a path to config.json)"),
    ("/tmp/" + "x" * 300 + "/config.json", ConfigError, "(File name too long)"),
    ("b" * (MAX_MODEL_CHARS + 1), ConfigError, "of 4,097 characters: expected at most 4,096"),
])
def test_an_impossible_name_is_refused_in_one_line(name, error, says):
    start = time.perf_counter()
    with pytest.raises(error) as info:
        load_model(name)
    assert says in str(info.value) and "\n" not in str(info.value)
    assert time.perf_counter() - start < 2


def test_the_cli_says_it_without_a_bug_line(capsys):
    assert main(["estimate", "x" * 100_000, "--device", "rtx-4090"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bug" not in err and "100,000 characters" in err


def test_a_tilde_user_that_does_not_exist_is_a_missing_path(capsys):
    assert main(["estimate", "~no-such-user-27/config.json", "--device", "rtx-4090"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bug" not in err
