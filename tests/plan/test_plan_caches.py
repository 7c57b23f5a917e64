"""Plans in one process (the web UI and the API serve many) share only what is keyed correctly: each plan gives the
same result after another plan has filled the planner's caches (plan/capacity.py step prices, price/rates.py op
classes, workload/inference.py priced phases) as it gives with those caches empty."""

import json
from pathlib import Path

from sizeup.hardware.catalog import load_catalog
from sizeup.plan import capacity
from sizeup.plan.recommend import plan_scenario
from sizeup.plan.scenario import load_scenario
from sizeup.price import rates
from sizeup.workload import inference

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CATALOG = load_catalog(include_user=False)


def _plan(name: str) -> str:
    result = plan_scenario(load_scenario(EXAMPLES / f"{name}.yaml"), CATALOG)
    return json.dumps(result.to_dict(), sort_keys=True, default=str)


def _empty_caches() -> None:
    capacity._step_pricing.cache_clear()
    rates._CLASSES.clear()
    inference._PRICED.clear()


def test_two_plans_in_one_process_give_what_each_gives_alone():
    _empty_caches()
    personal = _plan("personal-7b-chat")
    _empty_caches()
    team = _plan("team-api-200-users")
    assert len(inference._PRICED) and len(rates._CLASSES) and capacity._step_pricing.cache_info().currsize
    assert _plan("personal-7b-chat") == personal  # with the team plan's entries kept
    assert _plan("team-api-200-users") == team
    assert personal != team
