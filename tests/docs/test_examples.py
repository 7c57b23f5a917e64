"""Every example command of the docs pages runs, and prints what the page shows.

The convention (stated in docs/README.md): a fenced ```console block holds example commands, each a line
`$ sizeup ARGS`, followed by lines of the output it prints. The test runs each command in-process through
`sizeup.cli.main.main`, the commands of one page in order, in a temporary folder that links the repository's
folders (`examples/`, `docs/`, `tests/` …) and holds its own run store (`SIZEUP_DATA_DIR`), so a page may
measure and then show the run; it asserts:
- the exit code is 0, or the code a trailing `# exit N` on the command line states;
- every output line shown is (part of) a line the command printed on stdout or stderr, spaces collapsed; a
  line that is only `…` stands for lines left out.
A block whose first line is `# not run: REASON` (a GPU, a server on the network, a long measurement) is not
run: the test reports it skipped with that reason. Every page under docs/commands/ and docs/tasks/ is read;
every command `sizeup --help` lists has its page, which names each of the command's flags; the links of
README.md and the pages resolve. `python tests/docs/test_examples.py PAGE…` prints what each example prints now.
"""

from __future__ import annotations

import argparse
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs" / "commands").glob("*.md")) + sorted((ROOT / "docs" / "tasks").glob("*.md"))
BLOCK = re.compile(r"^```console\n(.*?)^```", flags=re.DOTALL | re.MULTILINE)
SKIP = "# not run:"


@dataclass
class Example:
    argv: list[str]
    exit_code: int
    shown: list[str]  # output lines the page shows, spaces collapsed
    where: str


def _squeeze(line: str) -> str:
    return " ".join(line.split())


def _examples(page: Path) -> tuple[list[Example], list[str]]:
    """The page's examples to run, and the reasons of its blocks not run."""
    examples, skipped = [], []
    for n, block in enumerate(BLOCK.findall(page.read_text(encoding="utf-8")), 1):
        lines = block.splitlines()
        if lines and lines[0].startswith(SKIP):
            skipped.append(f"{page.relative_to(ROOT)} block {n}: {lines[0][len(SKIP):].strip()}")
            continue
        for line in lines:
            if line.startswith("$ "):
                words = shlex.split(line[2:], comments=True)
                assert words[:1] == ["sizeup"], f"{page.name} block {n}: only sizeup commands run: {line}"
                code = re.search(r"#\s*exit (\d+)\s*$", line)
                examples.append(Example(words[1:], int(code.group(1)) if code else 0, [], f"{page.name}: {line}"))
            elif line.strip() and line.strip() not in ("…", "...") and examples:
                examples[-1].shown.append(_squeeze(line))
            elif line.strip() and not examples:
                raise AssertionError(f"{page.name} block {n}: output before any '$ sizeup' line: {line}")
    return examples, skipped


def _not_printed(example: Example, printed_text: str) -> list[str]:
    """The lines the page shows that the command did not print."""
    printed = [_squeeze(line) for line in printed_text.splitlines()]
    return [line for line in example.shown if not any(line in p for p in printed)]


def _sandbox(folder: Path) -> dict[str, str]:
    """Link the repository's folders into `folder` (the pages' paths are those of a checkout); the environment
    that gives the commands their own run store and configuration there."""
    for name in ("examples", "docs", "tests", "src", "benchmarks"):
        (folder / name).symlink_to(ROOT / name)
    return {"SIZEUP_DATA_DIR": str(folder / "data"), "XDG_CONFIG_HOME": str(folder / "config"),
            "SIZEUP_CONFIG_DIR": str(folder / "config" / "sizeup"), "COLUMNS": "200"}


def _run(example: Example, capsys) -> str | None:
    """None if the example behaves as the page says, else what differs."""
    from sizeup.cli.main import main

    code = main(list(example.argv))
    captured = capsys.readouterr()
    if code != example.exit_code:
        return f"{example.where}\n  exit code {code}, the page says {example.exit_code}\n  {captured.err.strip()[-400:]}"
    missing = _not_printed(example, captured.out + "\n" + captured.err)
    if missing:
        return f"{example.where}\n  not printed: " + "\n  not printed: ".join(missing)
    return None


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """A working folder with the repository's folders, its own run store and configuration; what a command writes
    stays there."""
    for name, value in _sandbox(tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_page_examples_run(page, sandbox, capsys):
    examples, _ = _examples(page)
    text = page.read_text(encoding="utf-8")
    if "```console" in text and not examples:
        pytest.skip("every example of this page is in a block not run (its reason is reported below)")
    if any(e.argv[:1] in (["flops"], ["roofline"], ["measure"], ["calibrate"]) and "onnx" not in " ".join(e.argv)
           for e in examples):
        pytest.importorskip("torch")
    failures = [f for f in (_run(e, capsys) for e in examples) if f]
    assert not failures, "\n".join(failures)


SKIPPED = [reason for page in PAGES for reason in _examples(page)[1]]


@pytest.mark.parametrize("reason", SKIPPED)
def test_examples_not_run_state_why(reason):
    assert reason.split(": ", 1)[1], f"{reason}: a block not run says why"
    pytest.skip(reason)


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    found = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found |= _flags(child)
        else:
            found |= {s for s in action.option_strings if s.startswith("--") and s != "--help"}
    return found


def test_every_command_has_a_page_naming_each_of_its_flags():
    from sizeup.cli.main import COMMANDS, build_parser

    parser = build_parser("*")
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    problems = []
    for name in COMMANDS:
        page = ROOT / "docs" / "commands" / f"{name}.md"
        if not page.exists():
            problems.append(f"no page docs/commands/{name}.md")
            continue
        text = page.read_text(encoding="utf-8")
        missing = sorted(f for f in _flags(commands[name]) if not re.search(re.escape(f) + r"(?![\w-])", text))
        if missing:
            problems.append(f"docs/commands/{name}.md does not name {', '.join(missing)}")
    assert not problems, "\n".join(problems)


def test_every_page_is_linked_from_the_index():
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    unlinked = [str(p.relative_to(ROOT / "docs")) for p in PAGES if f"({p.relative_to(ROOT / 'docs')})" not in index]
    assert not unlinked, f"docs/README.md does not link {unlinked}"


def test_the_readme_is_short_and_keeps_its_quick_start():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    quick = re.search(r"## Quick start\n\n```bash\n(.*?)```", readme, flags=re.DOTALL).group(1).splitlines()
    assert len(quick) == 2
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert quick[1].endswith("python -m pytest -q") and "python3 -m pytest -q" in ci  # the same suite
    assert "sizeup plan examples/" in quick[0]


def test_links_of_the_readme_and_the_pages_resolve():
    broken = []
    for page in [ROOT / "README.md", ROOT / "docs" / "README.md", *PAGES]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if not target.startswith(("http://", "https://")) and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, f"links to nothing: {broken}"


if __name__ == "__main__":  # python tests/docs/test_examples.py PAGE…: what each example prints now, to update a page
    import contextlib
    import io
    import os
    import sys
    import tempfile

    from sizeup.cli.main import main

    with tempfile.TemporaryDirectory() as folder:
        os.environ.update(_sandbox(Path(folder)))
        pages = [Path(p).resolve() for p in sys.argv[1:]]
        os.chdir(folder)
        for page in pages:
            for example in _examples(page)[0]:
                out, err = io.StringIO(), io.StringIO()
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    code = main(list(example.argv))
                missing = _not_printed(example, out.getvalue() + "\n" + err.getvalue())
                print(f"{example.where}  [exit {code}, page says {example.exit_code}]")
                print("".join(f"  NOT PRINTED: {line}\n" for line in missing) + out.getvalue() + err.getvalue())
