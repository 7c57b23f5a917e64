"""A second vision plan reads the traced ledger from the cache and gives the same plan."""

import json
from pathlib import Path

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.plan.recommend import plan_scenario
from sizeup.plan.scenario import load_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_a_second_vision_plan_reuses_the_trace_and_is_the_same(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from sizeup.ingest import trace_cache

    monkeypatch.setenv("SIZEUP_CACHE_DIR", str(tmp_path))
    traces = []
    real = trace_cache._trace
    monkeypatch.setattr(trace_cache, "_trace", lambda *a, **k: traces.append(a[0]) or real(*a, **k))
    scenario, catalog = load_scenario(EXAMPLES / "vision-inspection.yaml"), load_catalog(include_user=False)
    first = plan_scenario(scenario, catalog)
    second = plan_scenario(scenario, catalog)
    assert traces == ["sizeup.examples.zoo:resnet50"]
    # as JSON: unloaded images have no time per output token (NaN), which never equals itself
    assert json.dumps(second.to_dict(), sort_keys=True) == json.dumps(first.to_dict(), sort_keys=True)
    assert len(list((tmp_path / "traces").glob("*.json"))) == 1
