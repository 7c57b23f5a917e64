"""The what-if workbook of every example, recomputed by the `formulas` package (an Excel engine in
Python): its numbers equal the plan's, and ten times the traffic raises `monthly_cost` by exactly the
replicas that traffic needs at the plan's per-replica capacity."""

import math
from functools import lru_cache
from pathlib import Path

import pytest

pytest.importorskip("openpyxl")
formulas = pytest.importorskip("formulas")

from sizeup.hardware.catalog import load_catalog  # noqa: E402
from sizeup.plan.recommend import plan_scenario  # noqa: E402
from sizeup.plan.scenario import load_scenario  # noqa: E402
from sizeup.plan.sheet import build_sheet  # noqa: E402
from sizeup.report.xlsx import write_xlsx  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SERVING = ["team-api-200-users", "api-70b-p99-ttft", "personal-7b-chat"]
ALL = SERVING + ["team-lora-finetune", "jetson-edge", "vision-inspection"]


@lru_cache(maxsize=None)
def _plan(name):
    if name == "vision-inspection":
        pytest.importorskip("torch")
    return plan_scenario(load_scenario(EXAMPLES / f"{name}.yaml"), load_catalog(include_user=False))


def _workbook(name, tmp_path):
    result = _plan(name)
    path = tmp_path / f"{name}.xlsx"
    write_xlsx(build_sheet(result), str(path), result=result)
    return result, path


def _names(path):
    """Defined name -> formulas' cell key, e.g. "'[x.xlsx]INPUTS'!C2"."""
    from openpyxl import load_workbook

    wb = load_workbook(path)
    out = {}
    for name, dn in wb.defined_names.items():
        sheet, cell = dn.attr_text.split("!")
        out[name] = f"'[{path.name}]{sheet.upper()}'!{cell.replace('$', '')}"
    return out


def _calc(path, inputs=None):
    model = formulas.ExcelModel().loads(str(path)).finish()
    solution = model.calculate(inputs=inputs or {})
    return lambda key: solution[key].value[0, 0]


@pytest.mark.parametrize("name", ALL)
def test_recomputed_workbook_reproduces_the_plan(name, tmp_path):
    result, path = _workbook(name, tmp_path)
    names = _names(path)
    value = _calc(path)
    chosen = result.chosen
    if chosen.replicas is not None:
        for key in ("users", "peak_requests_per_s", "price_per_hour", "monthly_budget", "monthly_cost"):
            assert key in names or (key == "users" and result.scenario.traffic.users is None), key
        plan = chosen.replicas
        assert value(names["peak_requests_per_s"]) == pytest.approx(plan.peak_requests_per_s, rel=1e-9)
        assert value(names["base_requests_per_s"]) == pytest.approx(plan.base_requests_per_s, rel=1e-9)
        assert value(names["replicas_for_load"]) == plan.for_load
        assert value(names["replicas"]) == plan.with_redundancy
        assert value(names["replicas_at_base"]) == plan.at_base
        assert value(names["monthly_cost"]) == pytest.approx(chosen.cost_usd, rel=1e-9)
        if chosen.monthly is not None and not chosen.owned:
            assert value(names["instances"]) == chosen.monthly.instances
            assert value(names["instance_hours"]) == pytest.approx(chosen.monthly.instance_hours, rel=1e-9)
            assert value(names["monthly_on_demand"]) == pytest.approx(chosen.monthly.on_demand_usd, rel=1e-9)
            if chosen.monthly.mixed_usd is not None:
                assert value(names["monthly_mixed"]) == pytest.approx(chosen.monthly.mixed_usd, rel=1e-9)
        budget = result.scenario.budget.monthly_usd
        check = value(names["budget_check"])
        assert check == ("no budget set" if not budget else
                         "within budget" if chosen.cost_usd <= budget else "OVER BUDGET")
    elif "hours" in chosen.latency:
        # the workbook's job cost is the sheet's (instances billed whole for the run), not a share of an instance
        sheet_cost = build_sheet(result).cells()["job_on_demand"].value
        assert value(names["job_cost"]) == pytest.approx(sheet_cost, rel=1e-9)
        assert value(names["job_cost"]) == pytest.approx(
            chosen.latency["hours"] * value(names["instances"]) * chosen.offer.on_demand_usd_per_hour, rel=1e-9)
    if chosen.memory_bytes:
        assert value(names["memory_needed_gib"]) == pytest.approx(chosen.memory_bytes / 2**30, rel=1e-12)
    # every formula cell evaluated to a number or text, not an Excel error
    from openpyxl import load_workbook

    wb = load_workbook(path)
    for title in ("Inputs", "Plan"):
        for row in wb[title].iter_rows(min_row=2, min_col=3, max_col=3):
            cell = row[0]
            if isinstance(cell.value, str) and cell.value.startswith("="):
                got = value(f"'[{path.name}]{title.upper()}'!{cell.coordinate}")
                assert not str(got).startswith("#"), (title, cell.coordinate, cell.value, got)


@pytest.mark.parametrize("name", SERVING)
def test_ten_times_the_traffic_costs_the_replicas_it_needs(name, tmp_path):
    result, path = _workbook(name, tmp_path)
    names = _names(path)
    base = _calc(path)
    plan = result.chosen.replicas
    driver = "users" if result.scenario.traffic.users is not None else (
        "requests_per_day" if result.scenario.traffic.requests_per_day is not None else "peak_requests_per_s")
    after = _calc(path, {names[driver]: base(names[driver]) * 10})
    usable = plan.rate_per_replica * (1 - plan.headroom)
    replicas = max(1, math.ceil(10 * plan.peak_requests_per_s / usable - 1e-9)) + (plan.with_redundancy - plan.for_load)
    assert after(names["replicas"]) == replicas
    fleet = result.chosen.detail.get("fleet")
    if fleet is None or result.chosen.owned:  # owned cards: every replica all month
        expected = replicas * base(names["price_per_hour"]) * base(names["hours_per_month"])
    else:  # the autoscaled fleet: each load level at the replicas ten times its rate needs, in whole instances
        per_instance = base(names["replicas_per_instance"])
        spare = plan.with_redundancy - plan.for_load
        hours = sum(lv["hours"] * math.ceil((max(1, math.ceil(10 * lv["requests_per_s"] / usable - 1e-9)) + spare)
                                            / per_instance) for lv in fleet["levels"])
        price = {"spot": "spot_price_per_hour"}.get(result.chosen.pricing_basis, "on_demand_price_per_hour")
        expected = hours * base(names[price])
        assert after(names["instance_hours"]) == pytest.approx(hours, rel=1e-9)
    assert after(names["peak_requests_per_s"]) == pytest.approx(10 * plan.peak_requests_per_s, rel=1e-9)
    assert after(names["monthly_cost"]) == pytest.approx(expected, rel=1e-9)


def test_cli_xlsx_of_a_quick_plan_counts_users(tmp_path):
    from sizeup.cli.main import main

    path = tmp_path / "quick.xlsx"
    code = main(["plan", "llama-3.1-8b", "--task", "chat", "--users", "50", "--device", "l4",
                 "--format", "xlsx", "--out", str(path)])
    assert code == 0
    names = _names(path)
    value = _calc(path)
    assert value(names["users"]) == 50
    assert value(names["peak_requests_per_s"]) == pytest.approx(
        50 * value(names["requests_per_user_per_hour"]) / 3600 * value(names["peak_factor"]), rel=1e-12)


@pytest.mark.parametrize("name", ["team-api-200-users", "team-lora-finetune"])
def test_the_sheet_worksheet_opens_with_the_headline_and_its_live_cost(name, tmp_path):
    from openpyxl import load_workbook

    result, path = _workbook(name, tmp_path)
    ws = load_workbook(path)["sheet"]
    headline = build_sheet(result).headline
    assert ws["A2"].value == headline.text
    key = "monthly_cost" if name == "team-api-200-users" else "job_cost"
    assert ws["B3"].value == "=" + load_workbook(path).defined_names[key].attr_text
    cost = _calc(path)(f"'[{path.name}]SHEET'!B3")
    assert cost == pytest.approx(headline.cost_usd, rel=1e-9)


def test_a_batch_job_costs_the_same_in_the_headline_the_sheet_and_the_workbook(tmp_path):
    """A batch job on 1 GPU of a 2-GPU instance was quoted $0.47 in the headline, $0.94 in the sheet's cost section
    and $0.47 × ½ in the workbook: now the instance runs a replica on each GPU, billed whole, and all three agree."""
    from sizeup.api import plan

    report = plan("llama-3.2-1b", task="batch", tokens=1e8, devices=("rtx-5090",))
    chosen = report.result.chosen
    assert chosen.offer.gpu_count // chosen.gpus == chosen.detail["job_replicas"] > 1
    path = tmp_path / "batch.xlsx"
    write_xlsx(report.sheet, str(path), result=report.result)
    value, names = _calc(path), _names(path)
    sheet_cost = report.sheet.cells()["job_on_demand"].value
    assert report.sheet.headline.pricing_basis == "on-demand"
    assert report.sheet.headline.cost_usd == pytest.approx(sheet_cost, rel=1e-9)
    assert value(names["job_cost"]) == pytest.approx(sheet_cost, rel=1e-9)
    assert report.sheet.headline.count == chosen.gpus * chosen.detail["job_replicas"]
