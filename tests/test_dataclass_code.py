"""The dataclass methods' kept code (sizeup.dataclass_code): the same methods as `dataclasses` compiles, kept
between processes beside the bytecode, a damaged or foreign file ignored, other packages untouched."""

import dataclasses
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from sizeup import dataclass_code

SRC = Path(__file__).resolve().parents[1] / "src"
CLASS = '''
from __future__ import annotations
from dataclasses import dataclass, field

@dataclass(frozen=True)
class Point:
    """A point."""
    x: float
    y: float = 0.0
    tags: tuple[str, ...] = field(default_factory=tuple)

@dataclass(order=True, slots=True)
class Row:
    name: str
    count: int = 1
'''


def _module(name: str, cached: str | None = None) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__cached__ = cached or f"/nonexistent/__pycache__/{name}.pyc"
    sys.modules[name] = module
    try:
        exec(compile(CLASS, f"<{name}>", "exec"), module.__dict__)
    finally:
        del sys.modules[name]
    return module


@pytest.fixture
def kept(tmp_path, monkeypatch):
    """The kept code in files of this test's (one path for every module), starting empty."""
    path = tmp_path / "dataclass-code.bin"
    monkeypatch.setattr(dataclass_code, "cache_path", lambda cached: str(path))
    _fresh(monkeypatch)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    return path


def _fresh(monkeypatch):
    """As a new process: nothing loaded, nothing compiled."""
    monkeypatch.setattr(dataclass_code, "_tables", {})
    monkeypatch.setattr(dataclass_code, "_used", {})
    monkeypatch.setattr(dataclass_code, "_new", set())


def test_the_file_sits_beside_the_module_bytecode():
    assert dataclass_code.cache_path("/p/sizeup/hardware/__pycache__/schema.cpython-311.pyc") == \
        "/p/sizeup/hardware/__pycache__/schema.cpython-311.dataclass-code.bin"
    assert dataclass_code.cache_path("/p/__pycache__/schema.cpython-311.opt-1.pyc") == \
        "/p/__pycache__/schema.cpython-311.opt-1.dataclass-code.bin"


def _methods(module: types.ModuleType) -> dict[str, types.CodeType]:
    out = {}
    for cls in (module.Point, module.Row):
        for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__lt__"):
            fn = cls.__dict__.get(name)
            if isinstance(fn, types.FunctionType):
                out[f"{cls.__name__}.{name}"] = fn
    return out


def test_the_hook_is_installed_by_importing_sizeup():
    assert vars(dataclasses).get("exec") is dataclass_code._exec


def test_kept_methods_are_the_ones_dataclasses_compiles(kept):
    ours = _module("sizeup.fake_kept")
    dataclass_code.uninstall()
    try:
        stock = _module("sizeup.fake_stock")
    finally:
        dataclass_code.install()
    assert dataclass_code._new, "the sizeup module's texts went through the kept code"
    a, b = _methods(ours), _methods(stock)
    assert a.keys() == b.keys() and len(a) >= 8
    for name in a:
        ca, cb = a[name].__code__, b[name].__code__
        assert (ca.co_code, ca.co_consts, ca.co_names, ca.co_varnames, ca.co_filename, ca.co_flags) == \
               (cb.co_code, cb.co_consts, cb.co_names, cb.co_varnames, cb.co_filename, cb.co_flags), name
        assert a[name].__annotations__ == b[name].__annotations__, name
    p = ours.Point(1.5)
    assert repr(p) == "Point(x=1.5, y=0.0, tags=())" and p == ours.Point(1.5) and hash(p) == hash(ours.Point(1.5))
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2
    assert ours.Row("a") < ours.Row("b") and ours.Row.__slots__ == ("name", "count")


def test_code_is_kept_between_processes_and_not_compiled_again(kept, monkeypatch):
    _module("sizeup.fake_first")
    assert dataclass_code._new
    dataclass_code._save()
    assert kept.is_file() and not dataclass_code._new
    _fresh(monkeypatch)
    monkeypatch.setattr(dataclass_code, "compile", lambda *a, **k: pytest.fail("compiled again"), raising=False)
    module = _module("sizeup.fake_second")
    assert not dataclass_code._new and repr(module.Row("x", 2)) == "Row(name='x', count=2)"


@pytest.mark.parametrize("content", [b"", b"not marshal at all", None])
def test_a_damaged_or_foreign_file_is_ignored(kept, content):
    import marshal

    kept.write_bytes(content if content is not None else marshal.dumps(("another python", {"x": compile("1", "", "eval")})))
    module = _module("sizeup.fake_damaged")
    assert module.Point(2.0).x == 2.0 and dataclass_code._new


def test_nothing_is_written_when_bytecode_writing_is_off_or_the_folder_is_read_only(kept, monkeypatch, tmp_path):
    _module("sizeup.fake_nowrite")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    dataclass_code._save()
    assert not kept.exists()
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        monkeypatch.setattr(dataclass_code, "cache_path", lambda cached: str(folder / "x" / "dataclass-code.bin"))
        dataclass_code._save()  # no error
        assert not list(folder.iterdir()) or os.geteuid() == 0  # root writes anywhere
    finally:
        folder.chmod(0o700)


def test_other_packages_classes_are_compiled_as_before(kept):
    _module("somebody_else")
    _module("sizeup_not_quite")
    assert not dataclass_code._tables and not dataclass_code._new


def test_a_second_process_reads_the_kept_code(tmp_path):
    """End to end under PYTHONPYCACHEPREFIX: the first process writes the file, the next compiles nothing."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "PYTHONPYCACHEPREFIX": str(tmp_path / "pyc")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    code = ("import sizeup.workload.inference, sizeup.api.inference; from sizeup import dataclass_code as d; "
            "print(len(d._new), sum(map(len, d._used.values())), *sorted(d._tables))")
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    new, used, *paths = second.stdout.split()
    assert int(first.stdout.split()[0]) > 10 and new == "0" and int(used) > 100
    assert all(p.startswith(str(tmp_path)) and Path(p).is_file() for p in paths)
    assert any(p.endswith(f"schema.{sys.implementation.cache_tag}.dataclass-code.bin") for p in paths)


def test_sizeup_no_cache_leaves_dataclasses_alone():
    env = {**os.environ, "PYTHONPATH": str(SRC), "SIZEUP_NO_CACHE": "1"}
    code = "import dataclasses, sizeup.errors; print('exec' in vars(dataclasses))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert proc.stdout.strip() == "False", proc.stderr
