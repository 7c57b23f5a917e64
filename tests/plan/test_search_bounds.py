"""The serving search orders families by a cheap bound (the GPUs' tensor peak over a request's matrix FLOPs)
before pricing them under load: that bound must never be below the priced one, or a family could be pruned that
the priced bound would keep. Over every engine, the pruned search chooses what the exhaustive one does."""

from pathlib import Path

import pytest

from sizeup.engines.base import engine_names
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.load import load_model
from sizeup.plan.cost import pricing_basis
from sizeup.plan.recommend import plan_scenario
from sizeup.plan.scenario import load_scenario, parse_scenario
from sizeup.plan.serving import _compute_rate, _families, _max_batch, _request_matmul_flops, _saturated_rate
from sizeup.yaml_strict import load_yaml

ROOT = Path(__file__).resolve().parents[2]
CATALOG = load_catalog(include_user=False)


def _every_engine(name: str, **constraints):
    data = load_yaml((ROOT / "examples" / f"{name}.yaml").read_text(), name)
    data["constraints"] = data["constraints"] | {"engines": engine_names()} | constraints
    return parse_scenario(data)


@pytest.mark.parametrize("name, devices", [("team-api-200-users", ["l4", "l40s", "h100"]),
                                           ("api-70b-p99-ttft", ["h100", "a100-80g"])])
def test_the_cheap_bound_is_never_below_the_priced_one(name, devices):
    scenario = _every_engine(name, devices=devices)
    arch = load_model(scenario.model)
    families = _families(scenario, CATALOG, arch, pricing_basis(scenario), [], tuple(scenario.constraints.engines))
    flops = _request_matmul_flops(arch, scenario.traffic)
    checked = 0
    for fam in families:
        batch = fam.memory.max_concurrent_sequences or _max_batch(arch, fam.device, fam.cfg, fam.execution)
        priced = _saturated_rate(arch, fam, scenario.traffic, batch)
        cheap = _compute_rate(fam, flops)
        if priced is not None and cheap is not None:
            assert cheap >= priced, fam.name
            checked += 1
    assert checked >= 10


def test_every_engine_pruned_search_chooses_what_the_exhaustive_one_does():
    scenario = _every_engine("team-api-200-users", devices=["l4", "a10g"])
    pruned = plan_scenario(scenario, CATALOG)
    exhaustive = plan_scenario(scenario, CATALOG, prune=False)
    assert pruned.meets and exhaustive.meets
    assert pruned.chosen.cost_usd == pytest.approx(exhaustive.chosen.cost_usd)
    assert pruned.chosen.label == exhaustive.chosen.label
    assert any(r.reason.startswith("costs at least") for r in pruned.rejected)


def test_the_scenario_file_plans_over_every_engine():
    """Every engine allowed: a sheet, not an error, whichever engine wins (some have no listed server line)."""
    scenario = load_scenario(ROOT / "examples" / "team-api-200-users.yaml")
    assert scenario.constraints.engines == ("vllm",)
    result = plan_scenario(_every_engine("team-api-200-users", devices=["l4"]), CATALOG)
    assert result.meets
