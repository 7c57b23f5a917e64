"""sizeup.sources: under a policy (the web UI's workers) only presets, sizeup's own zoo and files inside the
policy's folders resolve, on every reader (models, Python targets, scenario files); without one the CLI is
unchanged."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sizeup.errors import ConfigError, IngestError, ResolveError, SizeupError
from sizeup.ingest.load import load_model
from sizeup.ingest.target import load_factory, target_source
from sizeup.plan.scenario import load_scenario
from sizeup.sources import SourcePolicy, active_policy, admit_model, restricted

CONFIG = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 512}


@pytest.fixture()
def folders(tmp_path):
    uploads, outside = tmp_path / "uploads", tmp_path / "outside"
    uploads.mkdir()
    outside.mkdir()
    for folder in (uploads, outside):
        (folder / "config.json").write_text(json.dumps(CONFIG))
        (folder / "scenario.yaml").write_text("name: s\nmodel: llama-3.1-8b\ntask: api\ntraffic: {users: 5}\n")
        (folder / "evil.py").write_text(f"open({str(folder / 'RAN')!r}, 'w').write('x')\ndef build():\n    pass\n")
    with restricted(SourcePolicy(roots=(uploads.resolve(),))):
        yield uploads, outside


def test_presets_and_uploaded_files_resolve(folders):
    uploads, _ = folders
    assert load_model("llama-3.1-8b").hidden == 4096
    assert load_model("meta-llama/Llama-3.1-8B").hidden == 4096  # a Hugging Face id of a preset
    assert load_model(str(uploads / "config.json")).hidden == 256
    assert load_scenario(uploads / "scenario.yaml").model == "llama-3.1-8b"


@pytest.mark.parametrize("name", ["config.json", "./config.json", "../outside/config.json", "~/config.json",
                                  "outside\\config.json", "model.gguf", "x.safetensors"])
def test_relative_and_home_paths_are_refused_without_a_look_on_disk(folders, name, monkeypatch):
    _, outside = folders
    monkeypatch.chdir(outside)  # each of these would open a real file from here without the policy
    with pytest.raises(ResolveError, match="a local path.*files are uploaded"):
        load_model(name)


def test_a_path_outside_is_refused_alike_whether_it_exists_or_not(folders):
    """No file-existence oracle: /etc/shadow and /etc/nonexistent answer the same line."""
    _, outside = folders
    answers = set()
    for path in (outside / "config.json", outside / "nonexistent.json", Path("/etc/shadow"),
                 Path("/etc/nonexistent"), outside / "scenario.yaml"):
        with pytest.raises(SizeupError) as e:
            load_model(str(path))
        answers.add(str(e.value))
    assert len(answers) == 1 and "/" not in answers.pop().split(":")[0]


def test_a_link_inside_the_folder_to_a_file_outside_is_refused(folders):
    uploads, outside = folders
    (uploads / "link.json").symlink_to(outside / "config.json")
    with pytest.raises(ResolveError, match="a local path"):
        load_model(str(uploads / "link.json"))
    with pytest.raises(ResolveError, match="a local path"):
        load_model(str(uploads / ".." / "outside" / "config.json"))


@pytest.mark.parametrize("target", ["os:abort", "tempfile:mkdtemp", "evil.py:build", "{outside}/evil.py:build",
                                    "{uploads}/evil.py:build", "sizeup.examples.zoo:Conv.forward",
                                    "sizeup.examples.zoo:_private", "sizeup.cli.main:main"])
def test_python_targets_are_refused_before_anything_is_imported(folders, target):
    uploads, outside = folders
    target = target.format(uploads=uploads, outside=outside)
    with pytest.raises(IngestError, match="runs no user code"):
        load_factory(target)
    assert target_source(target) is None
    with pytest.raises(IngestError, match="runs no user code"):
        load_model(target)
    assert not (uploads / "RAN").exists() and not (outside / "RAN").exists()


def test_sizeup_own_zoo_is_admitted():
    pytest.importorskip("torch")
    with restricted(SourcePolicy(roots=())):
        assert callable(load_factory("sizeup.examples.zoo:resnet50"))


def test_a_scenario_file_outside_the_folder_is_refused_alike_whether_it_exists(folders):
    _, outside = folders
    answers = set()
    for path in (outside / "scenario.yaml", outside / "missing.yaml", Path("/etc/passwd")):
        with pytest.raises(ConfigError, match="outside this UI's folder") as e:
            load_scenario(path)
        answers.add(str(e.value))
    assert len(answers) == 1


def test_without_a_policy_the_cli_reads_paths_and_targets_as_before(tmp_path):
    assert active_policy() is None and admit_model("/any/path.json") == "any"
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    assert load_model(str(tmp_path / "config.json")).hidden == 256
    assert callable(load_factory("os.path:join"))


def test_the_policy_is_restored_after_the_block(tmp_path):
    with restricted(SourcePolicy(roots=(tmp_path,))):
        assert active_policy() is not None
    assert active_policy() is None
    with pytest.raises(ValueError):
        SourcePolicy(roots=(Path("relative"),))


def test_a_model_name_too_long_for_the_file_system_is_one_line(tmp_path):
    """Without a policy too: 300 characters is past NAME_MAX (an OSError before), 100 KB past the cap."""
    with pytest.raises(ResolveError, match="unknown model"):
        load_model("x" * 300)
    with pytest.raises(ConfigError, match="100,000 characters"):
        load_model("x" * 100_000)
    assert os.path.exists(tmp_path)


def test_an_upload_is_read_as_a_head_only_under_the_policy_and_inside_its_folder(tmp_path):
    """`<file>.prefix-of` beside an upload (written by the UI's server) says it is the head of a larger file; the
    CLI, with no policy, never reads such a record, and a policy reads none outside its folders."""
    from sizeup.sources import upload_prefix_of

    inside, outside = tmp_path / "uploads" / "upload.gguf", tmp_path / "elsewhere" / "upload.gguf"
    for path in (inside, outside):
        path.parent.mkdir(parents=True)
        path.write_bytes(b"GGUF")
        Path(str(path) + ".prefix-of").write_text("123456789")
    assert upload_prefix_of(inside) is None  # no policy: every file is whole
    with restricted(SourcePolicy(roots=((tmp_path / "uploads").resolve(),))):
        assert upload_prefix_of(inside.resolve()) == 123456789
        assert upload_prefix_of(outside.resolve()) is None
        Path(str(inside) + ".prefix-of").write_text("12x")
        with pytest.raises(IngestError, match="record of the whole file's size is damaged"):
            upload_prefix_of(inside.resolve())
