"""Every validation row is a command line a user would type, nothing else: the runner's row files parse, every
command is one of sizeup's own (checked by its parser), every row has a source, a role and a known metric."""

import pytest

from tests.validation.bench import ROOT, _rows, args, runner


def test_every_row_file_is_found_and_ids_are_unique():
    files = _rows.row_files()
    assert len(files) >= 15
    loaded = _rows.load()
    assert len(loaded) >= 1000 and len({r.id for r in loaded}) == len(loaded)


@pytest.mark.parametrize("path", _rows.row_files(), ids=lambda p: p.name)
def test_rows_are_sourced_commands_with_known_metrics(path):
    for r in _rows.load_file(path):
        assert r.role in ("tuned", "check") and r.source and r.value > 0, r.id
        assert r.get("reference") and r.get("retrieved"), r.id
        runner.metric_of(r)  # raises for an unknown metric
        parsed = args(r)  # the CLI's own parser; a bad flag exits
        model = getattr(parsed, "model", None) or getattr(parsed, "target", None)
        if model and model.endswith(".json"):
            assert (ROOT / model).is_file(), (r.id, model)


def test_a_command_with_json_or_an_unknown_verb_is_refused(tmp_path):
    bad = tmp_path / "x_measurements.yaml"
    bad.write_text("- {id: a, source: s, role: check, command: 'sizeup estimate llama-3.1-8b --json', metric: m, "
                   "value: 1}\n")
    with pytest.raises(ValueError, match="adds --json"):
        _rows.load_file(bad)
    bad.write_text("- {id: a, source: s, role: fitted, command: 'sizeup estimate x', metric: m, value: 1}\n")
    with pytest.raises(ValueError, match="role"):
        _rows.load_file(bad)
