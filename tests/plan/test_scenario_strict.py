"""Strict scenarios (issue 27.4): a misspelt key in any section, a section or key the task does not read, a
key given twice, YAML 1.1 numbers, keys that override each other, and unknown providers, regions,
engines, formats and devices — each refused in one exact line that names the value."""

import pytest

from sizeup.cli.main import main
from sizeup.errors import ConfigError
from sizeup.plan.scenario import KEY_TASKS, TASKS, load_scenario, parse_scenario

API = {"model": "llama-3.1-8b", "task": "api", "traffic": {"users": 10}}
JOB = {"model": "llama-3.1-8b", "task": "finetune", "job": {"tokens": 1e8}}
EDGE = {"model": "llama-3.2-1b", "task": "edge", "edge": {"device": "jetson-orin-nano-8gb", "latency_s": 0.1}}
VISION = {"model": "sizeup.examples.zoo:resnet50", "task": "vision", "input_shape": "1x3x224x224",
          "traffic": {"peak_requests_per_s": 4}}


def refused(data: dict) -> str:
    with pytest.raises(ConfigError) as info:
        parse_scenario(data)
    message = str(info.value)
    assert "\n" not in message
    return message


def with_(base: dict, **change) -> dict:
    data = {**base}
    for key, value in change.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    return data


@pytest.mark.parametrize("data, message", [
    ({**API, "nmae": "x"}, "scenario key 'nmae' is not known (did you mean 'name'? expected one of: budget, "
                           "constraints, edge, input_shape, job, model, name, runtime, sla, task, traffic)"),
    (with_(API, traffic={"usres": 5}), "scenario key 'traffic.usres' is not known (did you mean 'traffic.users'? "),
    (with_(API, traffic={"prompt_tokens": {"mean": 5, "p59": 9}}),
     "scenario key 'traffic.prompt_tokens.p59' is not known (did you mean 'traffic.prompt_tokens.p95'? expected one "
     "of: mean, p95)"),
    (with_(API, sla={"ttft_p95": 1}), "scenario key 'sla.ttft_p95' is not known (did you mean 'sla.ttft_p95_s'? "),
    (with_(API, budget={"monthly": 5}), "scenario key 'budget.monthly' is not known (did you mean "
                                        "'budget.monthly_usd'? expected one of: electricity_usd_per_kwh, job_usd, monthly_usd, "
                                        "pricing)"),
    (with_(API, constraints={"provider": ["aws"]}),
     "scenario key 'constraints.provider' is not known (did you mean 'constraints.providers'? "),
    (with_(API, constraints={"owned": [{"device": "l4", "cnt": 1, "purchase_usd": 1}]}),
     "scenario key 'constraints.owned[0].cnt' is not known (did you mean 'constraints.owned[0].count'? expected one "
     "of: amortize_months, count, device, power_usd_per_kwh, purchase_usd)"),
    (with_(JOB, job={"tokenz": 5}), "scenario key 'job.tokenz' is not known (did you mean 'job.tokens'? "),
    (with_(EDGE, edge={"devce": "x"}), "scenario key 'edge.devce' is not known (did you mean 'edge.device'? expected "
                                       "one of: device, latency_s, price_usd, thermal_derate)"),
    # a misspelt key of a section the task does not read is refused too (once it was silently ignored)
    (with_(JOB, traffic={"usres": 5}), "scenario key 'traffic.usres' is not known (did you mean 'traffic.users'? "),
    (with_(API, edge={"lattency_s": 1}), "scenario key 'edge.lattency_s' is not known (did you mean 'edge.latency_s'? "),
    (with_(EDGE, job={"tokns": 1}), "scenario key 'job.tokns' is not known (did you mean 'job.tokens'? "),
    ({**API, 7: 1}, "scenario key '7' is not known (expected one of: "),
    ({**API, "x" * 5000: 1}, "scenario key '" + "x" * 40 + "…' is not known (expected one of: "),
])
def test_misspelt_keys_in_every_section(data, message):
    assert refused(data).startswith(message)


@pytest.mark.parametrize("data, message", [
    (with_(JOB, sla={"ttft_p95_s": 1}), "scenario key 'sla' does not apply to task 'finetune' (only chat, api and "
                                        "vision read it); remove it, or change the task"),
    (with_(JOB, traffic={"users": 5}), "scenario key 'traffic' does not apply to task 'finetune' (only chat, api, "
                                       "vision, batch and edge read it); remove it, or change the task"),
    (with_(API, job={"tokens": 5}), "scenario key 'job' does not apply to task 'api' (only finetune, pretrain and "
                                    "batch read it); remove it, or change the task"),
    (with_(API, edge={"device": "x"}), "scenario key 'edge' does not apply to task 'api' (only edge reads it); "
                                       "remove it, or change the task"),
    # an edge plan reads budget.electricity_usd_per_kwh (buy vs rent), not a monthly budget
    (with_(EDGE, budget={"monthly_usd": 5}), "scenario key 'budget.monthly_usd' does not apply to task 'edge' (only "
                                             "chat, api and vision read it)"),
    # an edge plan reads constraints.quantizations and engines (issue 30), not the rented-capacity keys
    (with_(EDGE, constraints={"devices": ["l4"]}), "scenario key 'constraints.devices' does not apply to task 'edge'"),
    ({**API, "input_shape": "1x3x8x8"}, "scenario key 'input_shape' does not apply to task 'api' (only vision reads "
                                        "it); remove it, or change the task"),
    (with_(EDGE, traffic={"peak_requests_per_s": 0.1}),
     "scenario key 'traffic.peak_requests_per_s' does not apply to task 'edge' (only chat, api and vision read it)"),
    (with_(VISION, traffic={"prompt_tokens": 1}),
     "scenario key 'traffic.prompt_tokens' does not apply to task 'vision' (only chat, api, batch and edge read it)"),
    (with_(VISION, sla={"ttft_p95_s": 1}),
     "scenario key 'sla.ttft_p95_s' does not apply to task 'vision' (only chat and api read it)"),
    (with_(VISION, constraints={"engines": ["vllm"]}),
     "scenario key 'constraints.engines' does not apply to task 'vision' (only chat, api, batch and edge read it)"),
    (with_(JOB, budget={"monthly_usd": 5}),
     "scenario key 'budget.monthly_usd' does not apply to task 'finetune' (only chat, api and vision read it)"),
    (with_(API, budget={"job_usd": 5}),
     "scenario key 'budget.job_usd' does not apply to task 'api' (only finetune, pretrain and batch read it)"),
    (with_(JOB, constraints={"headroom": 0.1}),
     "scenario key 'constraints.headroom' does not apply to task 'finetune' (only chat, api and vision read it)"),
    ({**JOB, "task": "batch", "job": {"tokens": 5, "method": "lora"}},
     "scenario key 'job.method' does not apply to task 'batch' (only finetune and pretrain read it)"),
])
def test_sections_and_keys_the_task_does_not_read(data, message):
    assert refused(data).startswith(message)


def test_an_empty_section_says_nothing_and_passes():
    assert parse_scenario({**JOB, "sla": None, "traffic": {}}).sla.empty


def test_every_key_names_real_tasks():
    assert all(tasks and set(tasks) <= set(TASKS) for tasks in KEY_TASKS.values())


def test_batch_and_edge_read_the_request_lengths():
    edge = parse_scenario(with_(EDGE, traffic={"prompt_tokens": 300, "output_tokens": 40}))
    assert (edge.traffic.prompt_tokens, edge.traffic.output_tokens) == (300, 40)
    batch = parse_scenario({**JOB, "task": "batch", "traffic": {"output_tokens": {"mean": 100, "p95": 200}}})
    assert (batch.traffic.prompt_tokens, batch.traffic.output_p95_tokens) == (512, 200)
    assert parse_scenario(EDGE).traffic is None


@pytest.mark.parametrize("traffic, message", [
    ({"users": 10, "peak_requests_per_s": 3}, "scenario keys 'traffic.users' and 'traffic.peak_requests_per_s' both "
                                              "set the request rate: give one of them"),
    ({"users": 10, "requests_per_day": 3}, "scenario keys 'traffic.users' and 'traffic.requests_per_day' both set"),
    ({"requests_per_day": 1000, "requests_per_user_per_hour": 3},
     "scenario key 'traffic.requests_per_user_per_hour' is read only with 'traffic.users'"),
    ({"users": 10, "peak_hour_share": 0.2},
     "scenario key 'traffic.peak_hour_share' is not read without 'traffic.requests_per_day'"),
    ({"requests_per_day": 1000, "peak_requests_per_s": 1, "profile": [1] * 24},
     "scenario key 'traffic.profile' is not read beside 'traffic.peak_requests_per_s', which sets the peak itself"),
    ({"requests_per_day": 1000, "peak_hour_share": 0.2, "profile": [1] * 24},
     "scenario keys 'traffic.peak_hour_share' and 'traffic.profile' both set the busiest hour's share"),
])
def test_traffic_keys_that_override_each_other(traffic, message):
    assert refused({**API, "traffic": traffic}).startswith(message)


def test_requests_per_day_with_an_explicit_peak_still_reads_both():
    t = parse_scenario({**API, "traffic": {"requests_per_day": 86400, "peak_requests_per_s": 5}}).traffic
    assert (t.base_requests_per_s, t.peak_requests_per_s) == (1.0, 5.0)


@pytest.mark.parametrize("job, message", [
    ({"tokens": 1e8, "epochs": 2}, "scenario keys 'job.tokens' and 'job.epochs'/'job.dataset_tokens': give tokens, "
                                   "or epochs and dataset_tokens, not both"),
])
def test_job_length_given_twice(job, message):
    assert refused({**JOB, "job": job}) == message


def test_vision_formats_are_fp16_or_fp32():
    assert refused(with_(VISION, constraints={"quantizations": ["bf16"]})) == (
        "scenario key 'constraints.quantizations' = 'bf16': a vision model is served in fp16 or fp32; expected fp16, "
        "fp32 or both")


@pytest.mark.parametrize("word, value", [("yes", True), ("No", False), ("on", True), ("OFF", False)])
def test_yes_no_are_booleans_where_a_boolean_is_expected(tmp_path, word, value):
    path = tmp_path / "s.yaml"
    path.write_text(f"model: llama-3.1-8b\ntask: api\ntraffic: {{users: 5}}\nconstraints:\n  spot: {word}\n"
                    f"  regions: [NO, us-east-1]\n")
    scenario = load_scenario(path)
    assert scenario.constraints.spot is value and scenario.constraints.regions == ("NO", "us-east-1")


# ---- files: YAML 1.2 numbers, duplicate keys ------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("model: llama-3.1-8b\ntask: api\ntraffic:\n  users: 1:30\n",
     "scenario key 'traffic.users' = '1:30': expected a number"),
    ("model: llama-3.1-8b\ntask: api\ntraffic:\n  users: 1_000\n",
     "scenario key 'traffic.users' = '1_000': expected a number"),
    ("model: llama-3.1-8b\ntask: api\ntraffic:\n  users: 20\n  prompt_tokens: 100\n  users: 200000\n",
     "{path}: line 6: key 'users' is given twice (first on line 4); give each key once"),
    ("model: llama-3.1-8b\ntask: api\ntraffic: {users: 20}\ntask: chat\n",
     "{path}: line 4: key 'task' is given twice (first on line 2); give each key once"),
    ("model: llama-3.1-8b\ntask: api\ntraffic: {users: 20}\nconstraints: {max_gpus: 0x10, devices: [l4], "
     "devices: [h100]}\n", "{path}: line 4: key 'devices' is given twice (first on line 4); give each key once"),
])
def test_scenario_files(tmp_path, text, message):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    assert str(info.value) == message.format(path=path) or str(info.value).startswith(message.format(path=path))


def test_yaml_12_octal_and_leading_zeros(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("model: llama-3.1-8b\ntask: api\ntraffic: {users: 010}\nconstraints: {max_gpus: 0o10}\n")
    scenario = load_scenario(path)
    assert scenario.traffic.users == 10 and scenario.constraints.max_gpus == 8  # YAML 1.1: 8 and a string


# ---- the CLI: one line, exit 1, the value named ------------------------------------------------------

def run_plan(tmp_path, capsys, body: str, *flags: str) -> tuple[int, str, str]:
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nmodel: llama-3.1-8b\ntask: api\ntraffic: {users: 20}\n" + body)
    code = main(["plan", str(path), *flags])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("body, line", [
    ("constraints: {providers: [aws, awz]}\n", "scenario key 'constraints.providers' = 'awz': no offer in the catalog "
     "has this provider (did you mean 'aws'? known: autodl, aws, azure, gcp, lambda, runpod, tencent, vastai)"),
    ("constraints: {regions: [us-east1]}\n", "scenario key 'constraints.regions' = 'us-east1': no offer in the "
     "catalog has this region (did you mean 'us-east-1'? known: "),
    ("constraints: {engines: [vllm, vllmm]}\n", "scenario key 'constraints.engines' = 'vllmm': unknown engine 'vllmm': "
     "expected one of "),
    ("constraints: {quantizations: [bf16, bf17]}\n", "scenario key 'constraints.quantizations' = 'bf17': unknown "
     "quantization 'bf17': expected one of "),
    ("constraints: {devices: [h1000]}\n", "scenario key 'constraints.devices': unknown device 'h1000'; closest: "),
    ("constraints: {owned: [{device: rtx-40900, purchase_usd: 1}]}\n",
     "scenario key 'constraints.owned[0].device': unknown device 'rtx-40900'; closest: "),
])
def test_unknown_names_are_refused_before_the_search(tmp_path, capsys, body, line):
    code, out, err = run_plan(tmp_path, capsys, body)
    assert code == 1 and out == "" and err.count("\n") == 1, err
    assert err.startswith("sizeup: error: " + line), err
    assert "no configuration meets" not in err and "Traceback" not in err


def test_a_misspelt_key_on_the_command_line(tmp_path, capsys):
    code, out, err = run_plan(tmp_path, capsys, "sla: {tft_p95_s: 1}\n", "--json")
    assert code == 1 and err.startswith("sizeup: error: scenario key 'sla.tft_p95_s' is not known (did you mean "
                                        "'sla.ttft_p95_s'? ")
