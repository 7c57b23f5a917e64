"""`sizeup.api` as a package: importing it loads nothing, every name it lists resolves, and the verbs the issue
names import from it."""

import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import sizeup.api as api

SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_importing_the_api_loads_no_module_of_its_own():
    code = ("import sys, sizeup; before = set(sys.modules); import sizeup.api; "
            "print(sorted(set(sys.modules) - before))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                         env={**os.environ, "PYTHONPATH": SRC}).stdout
    assert out.strip() == "['sizeup.api']"  # beyond what `import sizeup` loads


def test_every_listed_name_resolves():
    for name in api.__all__:
        assert getattr(api, name) is not None, name
    assert set(api.__all__) <= set(dir(api))


def test_no_submodule_shadows_a_verb():
    """`import sizeup.api.X` sets the package attribute X to the module: a module named like a verb would
    replace the function for every later `from sizeup.api import X`."""
    modules = {m.name for m in pkgutil.iter_modules(api.__path__)}
    assert not modules & set(api.__all__)
    for name in modules:
        importlib.import_module(f"sizeup.api.{name}")
    from sizeup.api import estimate, fit, models, plan, train

    assert all(callable(f) and not hasattr(f, "__path__") for f in (estimate, fit, models, plan, train))


def test_the_verbs_import_from_the_package():
    from sizeup.api import calibrate, compare, compare_run, hw, measure, plan, run, runs, train  # noqa: F401

    assert api.estimate.__module__ == "sizeup.api.inference"


def test_results_survive_pickling_for_a_worker_pool():
    import pickle

    for result in (api.estimate("llama-3.1-70b", device="rtx-4090"), api.fit("rtx-4090", models=("qwen2.5-7b",)),
                   api.train("llama-3.1-8b", device="h100", method="lora")):
        assert pickle.loads(pickle.dumps(result)).to_dict() == result.to_dict()
