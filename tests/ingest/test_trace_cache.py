"""The trace cache: a cached ledger equals the traced one, the key follows the model's source and the
inputs, a corrupt or stale entry is traced again, and the cache can be moved or turned off."""

import json
import sys
import textwrap
import uuid

import pytest

pytest.importorskip("torch")

from sizeup.ingest import trace_cache  # noqa: E402
from sizeup.ingest.trace_cache import cache_dir, trace_key, traced_ledger  # noqa: E402
from sizeup.ingest.trace_inputs import InputSpec, TraceMode  # noqa: E402
from sizeup.ledger import Ledger  # noqa: E402

MODEL = """
import torch
from HELPER import WIDTH


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, WIDTH)
        self.norm = torch.nn.LayerNorm(WIDTH)

    def forward(self, x):
        return self.norm(torch.relu(self.fc(x)))


def tiny():
    return Tiny()
"""


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SIZEUP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SIZEUP_NO_CACHE", raising=False)
    return tmp_path / "cache" / "traces"


@pytest.fixture
def model(tmp_path):
    helper = f"helper_{uuid.uuid4().hex}"  # a module name of its own: sys.modules outlives each test
    (tmp_path / f"{helper}.py").write_text("WIDTH = 16\n")
    path = tmp_path / "tiny_model.py"
    path.write_text(textwrap.dedent(MODEL).replace("HELPER", helper))
    yield path
    sys.modules.pop(helper, None)


@pytest.fixture
def traces(monkeypatch):
    """Counts the traces that really run."""
    calls = []
    real = trace_cache._trace

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(trace_cache, "_trace", counting)
    return calls


X = [InputSpec(shape=(2, 8))]


def test_a_cached_ledger_equals_the_traced_one(model, cache, traces):
    target = f"{model}:tiny"
    first = traced_ledger(target, X, mode=TraceMode.TRAIN, name="tiny")
    second = traced_ledger(target, X, mode=TraceMode.TRAIN, name="tiny")
    assert len(traces) == 1  # the second came from disk
    assert second == first
    assert second.memory_peak() == first.memory_peak() and second.by_scope() == first.by_scope()
    assert len(list(cache.glob("*.json"))) == 1 and not list(cache.glob("*.tmp"))


def test_the_ledger_survives_json_exactly(model):
    from sizeup.ingest.target import load_factory
    from sizeup.ingest.torch_trace import trace_module

    ledger = trace_module(load_factory(f"{model}:tiny"), X, mode=TraceMode.TRAIN, dtype="bf16")
    again = Ledger.from_dict(json.loads(json.dumps(ledger.to_dict())))
    assert again == ledger
    assert {o.phase.value for o in again.ops} == {"forward", "backward", "optimizer"}
    assert again.to_dict() == ledger.to_dict()


def test_the_key_follows_the_source_and_the_input_spec(model, monkeypatch):
    target = f"{model}:tiny"
    base = trace_key(target, X)
    assert base is not None and trace_key(target, X) == base
    others = [
        trace_key(target, [InputSpec(shape=(4, 8))]),
        trace_key(target, [InputSpec(shape=(2, 8), dtype="bf16")]),
        trace_key(target, X, dtype="fp16"),
        trace_key(target, X, mode=TraceMode.BACKWARD),
        trace_key(target, X, mode=TraceMode.TRAIN, optimizer="sgd"),
        trace_key(f"{model}:Tiny", X),
    ]
    assert len({base, *others}) == len(others) + 1
    model.write_text(model.read_text() + "\n# edited\n")
    assert trace_key(target, X) != base
    edited = trace_key(target, X)
    monkeypatch.setattr(trace_cache, "_version", lambda name: "0.0-other")  # another torch
    assert trace_key(target, X) != edited
    monkeypatch.setattr(trace_cache, "_sizeup_version", lambda: "9.9.9")
    assert trace_key(target, X) not in (edited, base)


def test_an_edited_model_is_traced_again(model, traces):
    target = f"{model}:tiny"
    traced_ledger(target, X)
    model.write_text(model.read_text().replace("torch.relu(self.fc(x))", "torch.sigmoid(self.fc(x))"))
    ledger = traced_ledger(target, X)
    assert len(traces) == 2
    assert any("sigmoid" in o.op for o in ledger.ops)


def test_an_edited_local_import_is_traced_again(model, traces):
    target = f"{model}:tiny"
    before = traced_ledger(target, X)
    (helper,) = model.parent.glob("helper_*.py")
    helper.write_text("WIDTH = 32\n")
    sys.modules.pop(helper.stem)  # the next run imports the edited helper, as a new process would
    after = traced_ledger(target, X)
    assert len(traces) == 2
    assert after.params == 8 * 32 + 32 + 2 * 32 and before.params == 8 * 16 + 16 + 2 * 16


@pytest.mark.parametrize("garbage", [b"", b"{not json", b'{"format": 1}', b"\xff\xfe", b'{"format": 1, "key": 3}'])
def test_a_corrupt_entry_is_traced_again(model, cache, traces, garbage):
    target = f"{model}:tiny"
    first = traced_ledger(target, X)
    (entry,) = cache.glob("*.json")
    entry.write_bytes(garbage)
    again = traced_ledger(target, X)
    assert again == first and len(traces) == 2
    assert json.loads(entry.read_text())["ledger"] == first.to_dict()  # rebuilt in place


def test_an_entry_with_another_key_inside_is_not_trusted(model, cache, traces):
    target = f"{model}:tiny"
    traced_ledger(target, X)
    (entry,) = cache.glob("*.json")
    data = json.loads(entry.read_text())
    data["key"] = "0" * 64
    entry.write_text(json.dumps(data))
    traced_ledger(target, X)
    assert len(traces) == 2


def test_the_cache_can_be_turned_off(model, cache, traces, monkeypatch):
    monkeypatch.setenv("SIZEUP_NO_CACHE", "1")
    assert cache_dir() is None
    target = f"{model}:tiny"
    first = traced_ledger(target, X)
    second = traced_ledger(target, X)
    assert first == second and len(traces) == 2
    assert not cache.parent.exists()


def test_the_cache_folder_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("SIZEUP_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "sizeup" / "traces"
    monkeypatch.setenv("SIZEUP_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine" / "traces"
    monkeypatch.setenv("SIZEUP_NO_CACHE", "0")  # "0" leaves it on
    assert cache_dir() == tmp_path / "mine" / "traces"


def test_an_unwritable_cache_only_costs_a_trace(model, tmp_path, monkeypatch, traces):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("SIZEUP_CACHE_DIR", str(blocker))  # a file where the folder should be
    target = f"{model}:tiny"
    assert traced_ledger(target, X) == traced_ledger(target, X)
    assert len(traces) == 2


def test_a_target_without_a_source_file_is_not_cached(traces):
    with pytest.raises(Exception, match="cannot import module"):
        traced_ledger("no_such_package_here.models:tiny", X)
    assert trace_key("no_such_package_here.models:tiny", X) is None
