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


def test_the_vision_sheet_shows_the_latency_per_image_with_its_overhead_term():
    pytest.importorskip("torch")
    from dataclasses import replace

    from sizeup.errors import ConfigError
    from sizeup.plan.sheet import build_sheet
    from sizeup.engines.runtimes import get_runtime

    scenario, catalog = load_scenario(EXAMPLES / "vision-inspection.yaml"), load_catalog(include_user=False)
    assert scenario.runtime == "pytorch-eager"
    result = plan_scenario(scenario, catalog)
    cells = build_sheet(result).cells()
    per_kernel = get_runtime("pytorch-eager").per_op_s.typical
    # ResNet-50 in eager PyTorch launches 174 kernels, plus cuDNN's NCHW->NHWC transpose before each of its 53
    # fp16 (tensor-core) convolutions (price/conv_algos.py); at batch 1 each waits on the host
    assert cells["overhead_per_image"].value == pytest.approx((174 + 53) * per_kernel, rel=1e-3)
    assert cells["latency_per_image"].value >= cells["overhead_per_image"].value
    fused = plan_scenario(replace(scenario, runtime="tensorrt"), catalog)
    assert build_sheet(fused).cells()["latency_per_image"].value < cells["latency_per_image"].value / 3
    with pytest.raises(ConfigError, match="runtime 'eager' is unknown"):
        plan_scenario(replace(scenario, runtime="eager"), catalog)
