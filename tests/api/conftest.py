import json

import pytest

from sizeup.cli.main import json_ready, main


def as_json(obj) -> object:
    """What `--json` prints of an object (NaN and infinities as null, other objects as text), read back."""
    return json.loads(json.dumps(json_ready(obj), default=str))


@pytest.fixture
def cli_json(capsys):
    """`sizeup ARGV` in this process: its exit code and the one JSON object it printed."""
    def run(argv: list[str], codes: tuple[int, ...] = (0,)) -> object:
        code = main(argv)
        captured = capsys.readouterr()
        assert code in codes, captured.err
        return json.loads(captured.out)

    return run
