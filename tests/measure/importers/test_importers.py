"""Load testers' result files become stored serving runs, `compare` sets the promise beside them, and `calibrate`
fits a serving profile from them.

The fixtures here are small files written in each tool's format as its source defines it (cited in
sizeup/measure/importers/*.py): a GuideLLM report with a synchronous and a concurrent benchmark, AIPerf's and
GenAI-Perf's profile exports, an inference-perf stage report, and `vllm bench serve` results (one object; two
appended lines). Their numbers are plausible for Llama-3.1-8B on an H100 (TTFT ~30-45 ms, TPOT ~7-8.5 ms), not
measurements: the tests check the reading, not the figures.
"""

import json
from pathlib import Path

import pytest

from sizeup.cli.main import main
from sizeup.errors import ConfigError
from sizeup.measure.importers import detect_source, read_result_file

HERE = Path(__file__).parent
FILES = {"guidellm": "guidellm_benchmarks.json", "aiperf": "profile_export_aiperf.json",
         "genai-perf": "profile_export_genai_perf.json", "inference-perf": "stage_0_lifecycle_metrics.json",
         "vllm-bench": "vllm_bench_serve.json"}


@pytest.mark.parametrize("source", sorted(FILES))
def test_each_format_is_recognised_and_read_in_seconds(source):
    result = read_result_file(HERE / FILES[source])
    assert result.source == source
    for p in result.points:
        assert 0.02 < p.ttft_s["p50"] < 0.05 and 0.006 < p.tpot_s["p50"] < 0.009  # ms in the files: seconds here
        assert p.ttft_s["p50"] <= p.ttft_s["p99"] and p.concurrency >= 1
        assert p.prompt_tokens == pytest.approx(512) and p.output_tokens == pytest.approx(128)


def test_what_each_file_says_of_its_load():
    guide = read_result_file(HERE / FILES["guidellm"])
    assert [(p.concurrency, p.concurrency_source.split()[0]) for p in guide.points] == [(1, "synchronous"),
                                                                                     (8, "concurrent")]
    assert guide.points[1].ttft_s["p99"] == pytest.approx(0.112) and guide.points[1].e2e_s["p50"] == 1.12
    assert guide.model == "meta-llama/Llama-3.1-8B-Instruct" and guide.points[0].errors == 1
    aiperf = read_result_file(HERE / FILES["aiperf"])
    assert aiperf.points[0].concurrency == 8 and aiperf.tool_version == "0.3.0" and aiperf.points[0].requests == 300
    assert aiperf.points[0].tpot_s == aiperf.points[0].itl_s  # AIPerf's ITL is per request: vLLM's TPOT
    genai = read_result_file(HERE / FILES["genai-perf"])
    assert genai.points[0].concurrency == 4 and genai.model == "meta-llama/Llama-3.1-8B-Instruct"
    ip = read_result_file(HERE / FILES["inference-perf"])
    # no concurrency in the stage file: Little's law, 7.01 requests/s x 1.13 s in flight
    assert ip.points[0].concurrency == 8 and ip.points[0].concurrency_source.startswith("Little")
    assert ip.points[0].ttft_s["p999"] == 0.16 and ip.model is None
    vllm = read_result_file(HERE / "vllm_bench_serve_appended.jsonl")
    assert [p.concurrency for p in vllm.points] == [1, 4] and vllm.engine == "vllm"
    assert vllm.points[1].concurrency_source.startswith("Little")  # rate 4/s, no --max-concurrency


def test_bad_files_are_refused_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    with pytest.raises(ConfigError, match="not a result file of guidellm"):
        read_result_file(bad)
    with pytest.raises(ConfigError, match="looks like a guidellm file, not aiperf"):
        read_result_file(HERE / FILES["guidellm"], "aiperf")
    (tmp_path / "text.json").write_text("not json at all")
    for argv, message in ((["runs", "import", str(tmp_path / "text.json")], "not JSON"),
                          (["runs", "import", str(tmp_path)], "not a regular file"),
                          (["runs", "import", str(HERE / FILES["aiperf"]), "--model", "no-such-model"], "no-such-model"),
                          (["runs", "import", str(HERE / FILES["aiperf"]), "--device-type", "h1000"], "h1000")):
        assert main([*argv, "--db", str(tmp_path / "runs.sqlite")]) == 1
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1
    assert detect_source([]) is None


def import_file(db, name, *extra, host="node-1"):
    assert main(["runs", "import", str(HERE / name), "--db", db, "--device-type", "h100", "--engine", "vllm@0.10.1",
                 "--model", "llama-3.1-8b", "--host", host, "--json", *extra]) == 0


@pytest.mark.parametrize("name", [FILES["guidellm"], FILES["aiperf"]])
def test_compare_shows_promised_against_measured_percentiles(tmp_path, capsys, name):
    db = str(tmp_path / "runs.sqlite")
    import_file(db, name)
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    assert main(["runs", "show", str(run_id), "--db", db]) == 0
    shown = capsys.readouterr().out
    assert "host node-1; engine vllm 0.10.1" in shown and "workload serving" in shown
    assert "device type h100-sxm-80gb" in shown
    scenario = tmp_path / "sla.yaml"
    scenario.write_text("name: chat\nmodel: llama-3.1-8b\ntask: api\ntraffic: {peak_requests_per_s: 7}\n"
                        "sla: {ttft_p95_s: 0.1, ttft_p99_s: 0.1, tpot_p95_s: 0.01}\n")
    assert main(["compare", str(run_id), "--db", db, "--sla", str(scenario), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    last = data["points"][-1]  # concurrency 8 in both files
    assert last["concurrency"] == 8
    assert last["sla"]["ttft_p95"]["promised_s"] == 0.1 and last["sla"]["ttft_p95"]["met"] is True
    assert last["sla"]["ttft_p99"]["measured_s"] == pytest.approx(0.112 if "guidellm" in name else 0.1105)
    assert last["sla"]["ttft_p99"]["met"] is False and data["all_met"] is False
    predicted = {r["metric"]: r for r in last["predicted"]}
    assert set(predicted) == {"ttft", "tpot"}
    assert predicted["tpot"]["measured_p50_s"] == last["tpot_s"]["p50"]
    assert predicted["tpot"]["predicted_low_s"] <= predicted["tpot"]["predicted_typical_s"]
    assert main(["compare", str(run_id), "--db", db, "--sla", str(scenario)]) == 0
    text = capsys.readouterr().out
    assert "promised (sizeup)" in text and "SLA TTFT p99: promised 100 ms, measured" in text and "MISSED" in text


def test_serving_runs_of_several_machines_calibrate_a_serving_profile(tmp_path, capsys):
    db = str(tmp_path / "runs.sqlite")
    import_file(db, FILES["guidellm"], host="node-1")
    import_file(db, FILES["aiperf"], host="node-2")
    import_file(db, "vllm_bench_serve_appended.jsonl", host="node-2")
    assert main(["runs", "import", str(HERE / FILES["inference-perf"]), "--device-type", "h100", "--db", db,
                 "--json"]) == 0  # its model not given
    assert main(["runs", "import", str(HERE / FILES["genai-perf"]), "--db", db, "--json"]) == 0  # no device type
    capsys.readouterr()
    assert main(["calibrate", "--device-type", "h100", "--name", "team", "--db", db, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    [profile] = data["profiles"]
    assert profile["name"] == "team/serving/vllm@0.10.1" and profile["hosts"] == ["node-1", "node-2"]
    assert len(profile["runs"]) == 3 and 0.3 < profile["values"]["memory"] < 1.5
    reasons = [i["reason"] for i in data["ignored"]]
    assert any("model is not known" in r for r in reasons)
    assert any(r == "measured on device type unknown, not h100-sxm-80gb" for r in reasons)
    assert main(["estimate", "llama-3.1-8b", "--device", "h100", "--engine", "vllm", "--calibration", "team",
                 "--db", db, "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["assumptions"]
    assert any("calibrated on 3 runs from 2 machines, vllm 0.10.1" in n for n in notes)
    assert main(["estimate", "llama-3.1-8b", "--device", "h100", "--engine", "llama.cpp", "--calibration", "team",
                 "--db", db]) == 1  # a vLLM profile does not price llama.cpp
    assert "holds no profile" in capsys.readouterr().err
