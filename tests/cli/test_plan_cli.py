import json
from pathlib import Path

import pytest

from sizeup.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_plan_sheet_sections(capsys):
    assert main(["plan", str(EXAMPLES / "team-api-200-users.yaml"), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["title"] for s in data["sections"]] == ["Hardware selection", "Cost budget", "SLA commitment",
                                                      "Fault plan", "Envelope check", "Recipe"]
    assert data["meets"] is True and data["plan"]["chosen"]["replicas"]["with_redundancy"] >= 2


def test_plan_markdown_and_quick_plan(capsys, tmp_path):
    out = tmp_path / "sheet.md"
    assert main(["plan", str(EXAMPLES / "jetson-edge.yaml"), "--format", "md", "--out", str(out)]) == 0
    assert "Fault plan" in out.read_text()
    assert main(["plan", "llama-3.2-1b", "--task", "chat", "--users", "20", "--device", "l4",
                 "--ttft-p95", "2"]) == 0
    assert "Compute requirement sheet" in capsys.readouterr().out


def test_xlsx_formulas_recompute_to_the_printed_numbers(tmp_path, capsys):
    openpyxl = pytest.importorskip("openpyxl")
    formulas = pytest.importorskip("formulas")
    path = tmp_path / "plan.xlsx"
    assert main(["plan", str(EXAMPLES / "team-api-200-users.yaml"), "--format", "xlsx", "--out", str(path)]) == 0
    assert main(["plan", str(EXAMPLES / "team-api-200-users.yaml"), "--format", "json"]) == 0
    printed = {c["key"]: c for s in json.loads(capsys.readouterr().out)["sections"] for c in s["cells"]}
    sheet = openpyxl.load_workbook(path)["sheet"]
    formula_rows = {row[0].value: row[1] for row in sheet.iter_rows(min_row=1) if isinstance(row[1].value, str)
                    and row[1].value.startswith("=")}
    assert formula_rows and all("Inputs!" in c.value or "Plan!" in c.value for c in formula_rows.values())
    solution = formulas.ExcelModel().loads(str(path)).finish().calculate()
    computed = {}
    for ref, value in solution.items():
        if "SHEET'!B" in ref.upper():
            computed[ref.upper().rsplit("!", 1)[1]] = value.value[0][0]
    for cell in printed.values():
        if cell["formula"]:
            row = next(r for label, r in formula_rows.items() if label == cell["label"])
            assert computed[row.coordinate] == pytest.approx(cell["value"], rel=1e-6), cell["key"]


def test_unmeetable_sla_exits_2_with_the_closest_option(tmp_path, capsys):
    scenario = tmp_path / "hard.yaml"
    scenario.write_text((EXAMPLES / "team-api-200-users.yaml").read_text().replace("ttft_p95_s: 1.5",
                                                                                   "ttft_p95_s: 0.001"))
    assert main(["plan", str(scenario)]) == 2
    out = capsys.readouterr().out
    assert "NO configuration meets the scenario; closest:" in out and "ttft_p95" in out


def test_malformed_scenario_is_one_line(tmp_path, capsys):
    scenario = tmp_path / "bad.yaml"
    scenario.write_text("model: llama-3.1-8b\ntask: api\ntraffic: {requests_per_day: many}\n")
    assert main(["plan", str(scenario)]) == 1
    err = capsys.readouterr().err
    assert "scenario key 'traffic.requests_per_day' = 'many': expected a number" in err and err.count("\n") == 1


def _scenario(tmp_path, old: str, new: str) -> str:
    path = tmp_path / "s.yaml"
    path.write_text((EXAMPLES / "team-api-200-users.yaml").read_text().replace(old, new))
    return str(path)


@pytest.mark.parametrize("old, new, message", [  # issue 14: the scenario examples
    ("users: 200", "users: .nan", "scenario key 'traffic.users' = nan: not a finite number"),
    ("{mean: 1200, p95: 4000}", "{mean: .inf}", "scenario key 'traffic.prompt_tokens.mean' = inf: not a finite number"),
    ("monthly_usd: 6000", "monthly_usd: .nan", "scenario key 'budget.monthly_usd' = nan: not a finite number"),
    ("max_gpus: 2", "max_gpus: 1.5", "scenario key 'constraints.max_gpus' = 1.5: expected a positive integer"),
    ("{mean: 1200, p95: 4000}", "1000000000000",
     "p95 prompt + output (1,000,000,000,000 + 800 tokens): longer than the 131,072-token context of llama-3.1-8b"),
])
def test_hostile_scenario_values_are_one_line(tmp_path, capsys, old, new, message):
    assert main(["plan", _scenario(tmp_path, old, new)]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_device_listed_20000_times_plans_once(tmp_path, capsys):
    import time

    devices = "devices: [" + ", ".join(["l4"] * 20_000) + "]"
    path = _scenario(tmp_path, "devices: [l4, a10g, l40s, a100-80g, h100]", devices)
    t0 = time.process_time()
    assert main(["plan", path, "--format", "json"]) == 0
    assert time.process_time() - t0 < 10
    assert json.loads(capsys.readouterr().out)["plan"]["chosen"]["device"] == "l4"


@pytest.mark.parametrize("raw, message", [
    (bytes(range(256)) * 40, "not UTF-8 text"),
    (b"[" * 100_000, "levels deep; expected at most 64"),
], ids=["binary", "nested"])
def test_binary_or_nested_scenario_is_one_line(tmp_path, capsys, raw, message):
    path = tmp_path / "s.yaml"
    path.write_bytes(raw)
    assert main(["plan", str(path)]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize("argv, message", [
    (["--rps", "nan"], "--rps nan: not a finite number"),
    (["--users", "-5"], "--users -5: expected a number >= 1"),
    (["--ttft-p95", "inf"], "--ttft-p95 inf: not a finite number"),
    (["--prompt", str(10**12)], "longer than the 131,072-token context of llama-3.2-1b"),
])
def test_hostile_quick_plan_flags(capsys, argv, message):
    assert main(["plan", "llama-3.2-1b", "--device", "l4", *argv]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_sla_flags_take_units_like_the_other_durations(capsys):
    argv = ["plan", "llama-3.2-1b", "--task", "chat", "--users", "20", "--device", "l4", "--format", "json"]
    assert main([*argv, "--ttft-p95", "500ms", "--tpot-p95", "50ms"]) == 0
    with_units = json.loads(capsys.readouterr().out)
    assert main([*argv, "--ttft-p95", "0.5", "--tpot-p95", "0.05"]) == 0
    assert json.loads(capsys.readouterr().out) == with_units
