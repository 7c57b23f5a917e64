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
    ({"constraints": {"spot": "maybe"}}, "scenario key 'constraints.spot' = 'maybe': expected true or false"),
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


# ---- issue 14: validation at the edge ------------------------------------------------------------

@pytest.mark.parametrize("change, message", [
    ({"traffic": {"users": float("nan")}}, "scenario key 'traffic.users' = nan: not a finite number"),
    ({"traffic": {"users": 200, "prompt_tokens": {"mean": float("inf")}}},
     "scenario key 'traffic.prompt_tokens.mean' = inf: not a finite number"),
    ({"budget": {"monthly_usd": float("nan")}}, "scenario key 'budget.monthly_usd' = nan: not a finite number"),
    ({"budget": {"monthly_usd": -5}}, "scenario key 'budget.monthly_usd' = -5: expected a number >= 0"),
    ({"constraints": {"max_gpus": 1.5}}, "scenario key 'constraints.max_gpus' = 1.5: expected a positive integer"),
    ({"constraints": {"max_gpus": 10**6}}, "<= 100,000"),
    ({"traffic": {"users": True}}, "scenario key 'traffic.users' = True: expected a number"),
    ({"traffic": {"users": "200"}}, "scenario key 'traffic.users' = '200': expected a number"),
    ({"traffic": {"users": 10**400}}, "expected a number >= 1 and <= 10,000,000,000"),
    ({"traffic": {"users": 20, "prompt_tokens": 800.5}},
     "'traffic.prompt_tokens' = 800.5: expected a positive integer"),
    ({"traffic": {"users": 20, "prompt_tokens": {"mean": 800, "p95": 400}}}, "expected at least the mean (800)"),
    ({"traffic": {"requests_per_day": 100, "profile": [float("inf")] * 24}}, "'traffic.profile[0]' = inf"),
    ({"sla": {"ttft_p95_s": float("nan")}}, "scenario key 'sla.ttft_p95_s' = nan: not a finite number"),
    ({"sla": {"ttft_p95_s": 10**9}}, "<= 86,400"),
    ({"constraints": {"devices": [f"d{i}" for i in range(300)]}}, "300 different names; expected at most 256"),
    ({"constraints": {"devices": ["x" * 300]}}, "300 characters; expected at most 256"),
    ({"constraints": {"owned": "rtx-4090"}}, "'constraints.owned': expected a list of mappings"),
    ({"model": "llama\x00"}, "expected printable text"),
    ({1: 2}, "scenario key '1' is not known"),
])
def test_hostile_values_are_refused_naming_the_key(change, message):
    data = {**BASE, **change}
    with pytest.raises(ConfigError) as info:
        parse_scenario(data)
    assert message in str(info.value)


def test_a_list_repeated_20000_times_is_one_name():
    s = parse_scenario({**BASE, "constraints": {"devices": ["l4"] * 20_000 + ["a10g"]}})
    assert s.constraints.devices == ("l4", "a10g")


def test_job_tokens_from_epochs_are_bounded():
    job = {"method": "lora", "epochs": 10_000, "dataset_tokens": 1e16}
    with pytest.raises(ConfigError, match="expected at most 1e16"):
        parse_scenario({"model": "llama-3.1-8b", "task": "finetune", "job": job})


@pytest.mark.parametrize("raw, message", [
    (bytes(range(256)) * 4, "not UTF-8 text (byte 0x80 at offset 128)"),
    ("# café\nmodel: llama-3.1-8b\n".encode("latin-1"), "not UTF-8 text"),
    ("model: llama-3.1-8b\n".encode("utf-16"), "UTF-16 text; save the scenario as UTF-8"),
    (b"model: llama-3.1-8b\x00\n", "binary data, not a YAML scenario"),
    (b"[" * 100_000, "levels deep; expected at most 64"),
    (b"- " * 50_000 + b"x", "YAML nested up to"),
    (b"model: llama-3.1-8b\n#" + b"x" * (2 * 2**20), "larger than 1,024 KiB"),
    (b"model: llama-3.1-8b\nname: 2024-13-45\n", "not valid YAML"),
    (b"model: llama-3.1-8b\nname: " + b"9" * 5000 + b"\n", "not valid YAML"),
], ids=["binary", "latin-1", "utf-16", "nul", "flow-nesting", "block-nesting", "2-MiB", "bad-date", "5000-digits"])
def test_files_refused_before_parsing(tmp_path, raw, message):
    path = tmp_path / "s.yaml"
    path.write_bytes(raw)
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_bom_is_accepted(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_bytes(b"\xef\xbb\xbfmodel: llama-3.1-8b\ntask: api\ntraffic: {users: 20}\n")
    assert load_scenario(path).model == "llama-3.1-8b"
