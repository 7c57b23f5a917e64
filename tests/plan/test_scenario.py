import pytest

from sizeup.errors import ConfigError
from sizeup.plan.scenario import load_scenario, parse_scenario

BASE = {"model": "llama-3.1-8b", "task": "api", "traffic": {"requests_per_day": 86400, "peak_hour_share": 0.1}}


def test_traffic_from_requests_per_day_and_peak_share():
    s = parse_scenario(BASE)
    assert s.traffic.base_requests_per_s == pytest.approx(1.0)
    assert s.traffic.peak_requests_per_s == pytest.approx(86400 * 0.1 / 3600)


def test_users_and_profile():
    s = parse_scenario({**BASE, "traffic": {"users": 200, "requests_per_user_per_hour": 12}})
    assert s.traffic.peak_requests_per_s == pytest.approx(200 * 12 / 3600)
    profile = [1] * 23 + [5]
    s = parse_scenario({**BASE, "traffic": {"requests_per_day": 28000, "profile": profile, "peak_factor": 2}})
    assert s.traffic.peak_requests_per_s == pytest.approx(28000 * 5 / 28 / 3600 * 2)


@pytest.mark.parametrize("change, message", [
    ({"task": "serve"}, "scenario key 'task' = 'serve': expected one of"),
    ({"traffic": {"requests_per_day": "lots"}}, "scenario key 'traffic.requests_per_day' = 'lots': expected a number"),
    ({"traffic": {"peak_hour_share": 0.2}}, "scenario key 'traffic' needs requests_per_day"),
    ({"sla": {"ttft_p97_s": 1}}, "scenario key 'sla.ttft_p97_s' is not known"),
    ({"constraints": {"spot": "yes"}}, "scenario key 'constraints.spot' = 'yes': expected true or false"),
    ({"colour": "blue"}, "scenario key 'colour' is not known"),
    ({"model": None}, "scenario key 'model' is missing"),
])
def test_malformed_scenarios_name_the_key(change, message):
    data = {**BASE, **change}
    if data.get("model") is None:
        data.pop("model")
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        parse_scenario(data)


def test_bad_yaml_file(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("model: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_scenario(path)
    with pytest.raises(ConfigError, match="does not exist"):
        load_scenario(tmp_path / "missing.yaml")
