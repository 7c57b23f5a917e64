"""The recovery a serving plan promises (plan/fault.py): its arithmetic, the sheet's fault-plan cell, and the
deploy files probing as the promise assumes."""

from dataclasses import replace

import pytest

from sizeup.plan.fault import READINESS_PROBE, recovery_promise, scenario_promise
from sizeup.plan.scenario import load_scenario
from tests.plan.example_sheets import EXAMPLES, example_sheet


def test_a_spare_bounds_recovery_by_the_readiness_probe():
    promise = recovery_promise(True)
    # 3 failed probes 10 s apart, the last one timing out after Kubernetes' default 1 s
    assert promise.seconds == 3 * 10 + 1
    assert recovery_promise(False).seconds is None and "no standby" in recovery_promise(False).basis


def test_the_scenario_rule_follows_the_planner():
    scenario = load_scenario(EXAMPLES / "team-api-200-users.yaml")
    assert scenario_promise(scenario).seconds == 31.0
    off = replace(scenario, constraints=replace(scenario.constraints, redundancy=False))
    assert scenario_promise(off).seconds is None


def test_the_serving_sheet_promises_the_recovery():
    _, sheet = example_sheet("team-api-200-users")
    fault = next(s for s in sheet.sections if s.title == "Fault plan")
    cell = next(c for c in fault.cells if c.key == "recovery_s")
    assert cell.value == 31.0 and "sizeup load --chaos" in cell.note


def test_the_deploy_files_probe_as_the_promise_assumes():
    pytest.importorskip("yaml")
    from sizeup.report.deploy import manifests

    result, _ = example_sheet("team-api-200-users")
    deployment = next(o for o in manifests(result) if o["kind"] == "Deployment")
    probe = deployment["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]
    assert probe["periodSeconds"] == READINESS_PROBE["periodSeconds"]
    assert probe["failureThreshold"] == READINESS_PROBE["failureThreshold"]
    assert probe.get("timeoutSeconds", 1) == READINESS_PROBE["timeoutSeconds"]  # 1: Kubernetes' default


def test_a_job_scenario_promises_no_serving_recovery():
    scenario = load_scenario(EXAMPLES / "team-lora-finetune.yaml")
    promise = scenario_promise(scenario)
    assert promise.seconds is None and "no serving replicas" in promise.basis
