"""Every example of docs/api.md runs, each on its own (from the repository root, so its example paths
resolve; a run store it writes goes to a temporary folder)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "api.md").read_text(encoding="utf-8"), flags=re.S)


def test_the_page_has_an_example_for_every_verb():
    import sizeup.api as api

    text = "\n".join(BLOCKS)
    verbs = ["estimate", "compare", "fit", "models", "train", "train_methods", "plan", "measure", "calibrate",
             "compare_run", "runs", "run", "hw", "hw_list", "offers", "local", "count_flops"]
    assert all(callable(getattr(api, v)) for v in verbs)
    missing = [v for v in verbs if not re.search(rf"\b{v}\(", text)]
    assert not missing, f"no example calls {missing}"


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_runs(index, tmp_path, monkeypatch, capsys):
    code = BLOCKS[index]
    if code.startswith("# needs torch"):
        pytest.importorskip("torch")
    monkeypatch.chdir(ROOT)
    code = code.replace('db="runs.sqlite"', f'db={str(tmp_path / "runs.sqlite")!r}')
    exec(compile(code, f"docs/api.md example {index + 1}", "exec"), {})
    assert capsys.readouterr().out.strip()  # each example prints what it computed
