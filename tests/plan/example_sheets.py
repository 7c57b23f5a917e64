"""Every example scenario planned once and turned into its sheet, shared by the headline and the
screenshot tests (a vision plan traces a torch model: its cache goes to a temporary folder)."""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NAMES = tuple(sorted(p.stem for p in EXAMPLES.glob("*.yaml")))


@functools.cache
def example_sheet(name: str):
    """(PlanResult, Sheet) of examples/NAME.yaml on the shipped catalog (user catalog excluded)."""
    from sizeup.hardware.catalog import load_catalog
    from sizeup.plan.recommend import plan_scenario
    from sizeup.plan.scenario import load_scenario
    from sizeup.plan.sheet import build_sheet

    previous = os.environ.get("SIZEUP_CACHE_DIR")
    os.environ["SIZEUP_CACHE_DIR"] = _cache_dir()
    try:
        result = plan_scenario(load_scenario(EXAMPLES / f"{name}.yaml"), load_catalog(include_user=False))
    finally:
        if previous is None:
            os.environ.pop("SIZEUP_CACHE_DIR", None)
        else:
            os.environ["SIZEUP_CACHE_DIR"] = previous
    return result, build_sheet(result)


@functools.cache
def _cache_dir() -> str:
    return tempfile.mkdtemp(prefix="sizeup-example-cache-")
