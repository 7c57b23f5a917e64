"""The web app's API and pages through Starlette's TestClient: API = CLI, bad input, safety limits."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("multipart")
from starlette.testclient import TestClient  # noqa: E402

from sizeup.ui.app import create_app  # noqa: E402

SRC = Path(__file__).resolve().parents[2] / "src"


BASE = "http://127.0.0.1:8765"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    """A client of this UI as its own pages talk to it: same origin, with the session's CSRF token."""
    with TestClient(create_app(tmp_path_factory.mktemp("ui")), base_url=BASE, raise_server_exceptions=False) as c:
        c.headers.update({"origin": BASE, "x-csrf-token": c.get("/api/session").json()["csrf_token"]})
        yield c


def cli(*argv: str) -> dict:
    """`python -m sizeup ARGV` in a fresh process, its stdout as JSON."""
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "sizeup", *argv], capture_output=True, text=True, env=env,
                          check=False)
    assert done.returncode in (0, 2), done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("query, argv", [
    ({"model": "llama-3.1-8b", "device": "rtx-4090", "quant": "q4_k_m"},
     ["llama-3.1-8b", "--device", "rtx-4090", "--quant", "q4_k_m"]),
    ({"model": "llama-3.1-8b", "device": "rtx-4090", "quant": "q4_k_m", "engine": "llama.cpp", "gpu_layers": "20"},
     ["llama-3.1-8b", "--device", "rtx-4090", "--quant", "q4_k_m", "--engine", "llama.cpp", "--gpu-layers", "20"]),
    ({"model": "qwen2.5-7b", "device": "h100-sxm-80gb", "quant": "fp8", "engine": "vllm", "batch": "16"},
     ["qwen2.5-7b", "--device", "h100-sxm-80gb", "--quant", "fp8", "--engine", "vllm", "--batch", "16"]),
    ({"model": "mistral-7b", "device": "a100-sxm-80gb", "quant": "bf16", "engine": "hf", "context": "8192",
      "prompt": "2048", "output": "256"},
     ["mistral-7b", "--device", "a100-sxm-80gb", "--quant", "bf16", "--engine", "hf", "--context", "8192",
      "--prompt", "2048", "--output", "256"]),
])
def test_api_estimate_equals_the_cli_json(client, query, argv):
    r = client.get("/api/estimate", params=query)
    assert r.status_code == 200, r.text
    assert r.json() == cli("estimate", *argv, "--json")


def test_api_train_equals_the_cli_json(client):
    r = client.get("/api/train", params={"model": "llama-3.1-8b", "device": "h100-sxm-80gb", "tokens": "1e8"})
    assert r.status_code == 200, r.text
    want = cli("train", "llama-3.1-8b", "--device", "h100-sxm-80gb", "--tokens", "1e8", "--compare", "full,lora,qlora",
               "--json")
    assert r.json() == want
    assert [m["method"] for m in r.json()["methods"]] == ["full", "lora", "qlora"]


def test_api_plan_equals_the_cli_json(client):
    r = client.post("/api/plan", json={"model": "llama-3.1-8b", "task": "chat", "users": 20, "engine": "vllm"})
    assert r.status_code == 200, r.text
    assert r.json() == cli("plan", "llama-3.1-8b", "--task", "chat", "--users", "20", "--engine", "vllm",
                           "--format", "json")


@pytest.mark.parametrize("fields, field, task", [
    ({"task": "batch", "tokens": "1e8", "users": "20"}, "users", "batch"),
    ({"task": "batch", "tokens": "1e8", "ttft_p95": "500ms"}, "ttft_p95", "batch"),
    ({"task": "finetune", "tokens": "1e8", "engine": "vllm"}, "engine", "finetune"),
    ({"task": "pretrain", "tokens": "1e8", "prompt": "800"}, "prompt", "pretrain"),
    ({"task": "edge", "devices": "jetson-orin-nano-8gb", "tpot_p95": "100ms", "rps": "2"}, "rps", "edge"),
])
def test_a_plan_field_the_task_does_not_read_is_a_400_naming_it(client, fields, field, task):
    """The plan form used to send users and engine with a job, and the server ignored them: now a field the task
    does not read is refused before any plan runs, from the form and from the JSON API alike."""
    for r in (client.post("/api/plan", json={"model": "llama-3.2-1b", **fields}),
              client.post("/plan/result", data={"model": "llama-3.2-1b", **fields})):
        assert r.status_code == 400, r.text
        text = r.json()["error"] if r.headers["content-type"].startswith("application/json") else r.text
        assert f"field '{field}' does not apply to task '{task}'" in text


def test_a_plan_field_left_empty_is_not_sent(client):
    """An empty field is no value: a batch job with an empty users box plans."""
    r = client.post("/api/plan", json={"model": "llama-3.2-1b", "task": "batch", "tokens": "1e8", "users": "",
                                       "devices": "h100"})
    assert r.status_code == 200, r.text
    assert r.json()["headline"]["period"] == "job"


def test_api_fit_equals_the_cli_json(client):
    r = client.get("/api/fit", params={"device": "rtx-4060-ti-16gb", "task": "chat"})
    assert r.status_code == 200, r.text
    assert r.json() == cli("fit", "rtx-4060-ti-16gb", "--task", "chat", "--json")
    assert len(r.json()["models"]) >= 10


def test_api_flops_of_a_zoo_model_equals_the_cli_json(client):
    r = client.get("/api/flops", params={"zoo": "c2f", "input": "1x64x64x64"})
    assert r.status_code == 200, r.text
    assert r.json() == cli("flops", "sizeup.examples.zoo:c2f", "--input", "1x64x64x64", "--json")


def test_a_model_that_does_not_fit_is_a_result_not_an_error(client):
    query = {"model": "llama-3.1-70b", "device": "rtx-4090", "quant": "q8_0", "engine": "llama.cpp"}
    r = client.get("/api/estimate", params=query)
    assert r.status_code == 200, r.text
    assert r.json() == cli("estimate", "llama-3.1-70b", "--device", "rtx-4090", "--quant", "q8_0", "--engine",
                           "llama.cpp", "--json")
    assert r.json()["fits"] is False and r.json()["would_fit"]


def test_a_zoo_model_is_named_from_the_list_only(client):
    r = client.get("/api/flops", params={"zoo": "os:system", "input": "1"})
    assert r.status_code == 400 and "expected one of" in r.text


@pytest.mark.parametrize("url, status, words", [
    ("/api/estimate?model=no-such-model&device=rtx-4090", 400, "unknown model 'no-such-model'"),
    ("/api/estimate?model=llama-3.1-8b&device=rtx-4090&batch=-2", 400, "--batch -2"),
    ("/api/estimate?model=llama-3.1-8b&device=no-such-card", 400, "no-such-card"),
    ("/api/estimate?model=/etc/passwd&device=rtx-4090", 400, "files are uploaded"),
    ("/api/estimate?model=evil.py:make&device=rtx-4090", 400, "runs no user code"),
    ("/api/compare?model=llama-3.1-8b&batch=-1", 400, "batch '-1'"),
])
def test_bad_input_is_a_4xx_with_one_line_and_the_server_still_answers(client, url, status, words):
    r = client.get(url)
    assert r.status_code == status
    message = r.json()["error"]
    assert words in message and "\n" not in message and "Traceback" not in message
    assert client.get("/api/estimate", params={"model": "llama-3.1-8b", "device": "rtx-4090"}).status_code == 200


def test_a_50_mb_upload_is_refused_with_413(client):
    big = io.BytesIO(b"\0" * (50 * 2**20))
    r = client.post("/estimate/result", files={"file": ("model.safetensors", big)}, data={"device": "rtx-4090"})
    assert r.status_code == 413 and "8 MiB" in r.text
    assert client.get("/api/estimate?model=llama-3.1-8b&device=rtx-4090").status_code == 200


def test_malformed_yaml_is_a_400_naming_the_line(client):
    r = client.post("/api/plan", json={"scenario": "name: x\nmodel: [unclosed\n"})
    assert r.status_code == 400 and "not valid YAML" in r.json()["error"]
    assert "/" not in r.json()["error"].split("not valid YAML")[0]  # the upload's name, not where it is kept
    assert client.post("/api/plan", json={"model": "llama-3.1-8b", "users": 5}).status_code == 200


def test_uploaded_config_json_is_estimated(client):
    config = {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 22,
              "num_attention_heads": 32, "num_key_value_heads": 4, "vocab_size": 32000,
              "max_position_embeddings": 2048, "torch_dtype": "bfloat16"}
    r = client.post("/estimate/result", files={"file": ("config.json", json.dumps(config).encode())},
                    data={"device": "rtx-4090", "quant": "bf16", "engine": "hf", "batch": "1"})
    assert r.status_code == 200 and 'id="figures"' in r.text, r.text[:300]
    assert "class=\"error\"" not in r.text


def test_estimate_page_opens_with_figures(client):
    r = client.get("/estimate")
    assert r.status_code == 200
    assert 'id="ttft"' in r.text and 'id="tps"' in r.text and "NVIDIA GeForce RTX 4090" in r.text
    chart = r.text.split('id="memory-chart">')[1]
    assert chart.lstrip().startswith("<svg") and "data-bytes" in chart.split("</svg>")[0]  # report.charts' stack
    assert "/static/htmx.min.js" in r.text and "https://" not in r.text.split("<body>")[0]  # no CDN


def test_plan_downloads_are_the_sheet_in_each_format(client):
    openpyxl = pytest.importorskip("openpyxl")
    r = client.post("/plan/result", data={"model": "llama-3.1-8b", "task": "chat", "users": "20"})
    assert r.status_code == 200 and 'id="verdict"' in r.text
    key = r.text.split("/plan/download/")[1].split(".")[0]
    xlsx = client.get(f"/plan/download/{key}.xlsx")
    assert xlsx.status_code == 200
    book = openpyxl.load_workbook(io.BytesIO(xlsx.content))
    assert book.sheetnames
    sheet = client.get(f"/plan/download/{key}.json").json()
    assert sheet["verdict"] and "plan" in sheet
    assert client.get(f"/plan/download/{key}.md").text.lstrip().startswith("#")
    assert "<html" in client.get(f"/plan/download/{key}.html").text.lower()
    assert client.get(f"/plan/download/{key}.exe").status_code == 404
    deploy = client.get(f"/plan/download/{key}.zip")  # the manifests of `plan --deploy`
    assert deploy.status_code == 200, deploy.text
    import yaml
    import zipfile

    with zipfile.ZipFile(io.BytesIO(deploy.content)) as archive:
        kinds = {yaml.safe_load(archive.read(n))["kind"] for n in archive.namelist()}
    assert {"Deployment", "Service", "HorizontalPodAutoscaler"} <= kinds


def test_compare_lists_devices_and_filters_by_vendor(client):
    data = client.get("/api/compare", params={"model": "llama-3.1-8b", "quant": "q4_k_m", "vendor": "nvidia",
                                              "kind": "gpu"}).json()
    assert data["devices"] and all(r["vendor"].lower() == "nvidia" for r in data["devices"])
    priced = [r for r in data["devices"] if r["usd_per_million_tokens"]]
    assert priced and all(r["usd_per_million_tokens"] > 0 and r["fits"] for r in priced)


def test_other_pages_render(client):
    compare = client.get("/compare", params={"model": "llama-3.1-8b", "quant": "q4_k_m", "kind": "gpu"}).text
    assert "<svg" in compare.split('id="compare-chart">')[1].split("</div>")[0]
    for url in ("/compare", "/train", "/plan", "/runs"):
        assert client.get(url).status_code == 200, url


def test_the_estimate_command_does_not_import_the_web_stack():
    code = ("import sys, io, contextlib\nfrom sizeup.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): main(['estimate', 'llama-3.1-8b', '--device', 'rtx-4090'])\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('starlette', 'uvicorn', 'jinja2') "
            "or m.startswith('sizeup.ui')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}, check=True)
    assert done.stdout.strip() == "[]"


def test_ui_binds_localhost_by_default():
    from sizeup.cli.main import build_parser

    args = build_parser("ui").parse_args(["ui", "--no-browser"])
    assert args.host == "127.0.0.1" and args.port == 8765


def test_another_host_is_served_only_with_allow_remote_and_a_warning(monkeypatch, capsys):
    import uvicorn

    from sizeup.cli.main import build_parser
    from sizeup.errors import ConfigError

    served = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, host, port, **kw: served.update(host=host, port=port))
    args = build_parser("ui").parse_args(["ui", "--no-browser", "--host", "0.0.0.0", "--port", "9000"])
    with pytest.raises(ConfigError, match="--allow-remote"):
        args.func(args)
    assert served == {}
    args = build_parser("ui").parse_args(["ui", "--no-browser", "--host", "0.0.0.0", "--port", "9000",
                                          "--allow-remote"])
    assert args.func(args) == 0
    assert served == {"host": "0.0.0.0", "port": 9000}
    assert "warning: binding 0.0.0.0" in capsys.readouterr().err
    args = build_parser("ui").parse_args(["ui", "--no-browser"])
    args.func(args)
    assert served["host"] == "127.0.0.1" and "warning" not in capsys.readouterr().err


def test_compare_rows_are_the_cli_device_table(client):
    """/api/compare without filters holds the rows of `sizeup estimate MODEL --devices all --json`."""
    want = {r["device"]: r for r in cli("estimate", "llama-3.1-8b", "--devices", "all", "--json")["devices"]}
    got = {r["device"]: r for r in client.get("/api/compare", params={"model": "llama-3.1-8b"}).json()["devices"]}
    assert got.keys() == want.keys()
    for device, row in want.items():
        assert {k: got[device][k] for k in row} == row, device


def test_an_uploaded_gguf_header_is_estimated(client):
    from tests.ingest.model_files import tiny_llama_gguf

    r = client.post("/estimate/result", files={"file": ("tiny.gguf", tiny_llama_gguf())},
                    data={"device": "rtx-4090", "engine": "llama.cpp", "batch": "1"})
    assert r.status_code == 200 and 'id="figures"' in r.text, r.text[:300]
    assert "class=\"error\"" not in r.text


def test_the_head_of_a_large_gguf_file_is_estimated_as_its_head(client):
    """What static/estimate.js sends for a .gguf file over 8 MiB: its first 8 MiB and its size (file_bytes). The
    estimate reads the header from the head and says the tensor data was not seen; the same head without
    file_bytes is a truncated file, refused in one line."""
    from tests.ingest.test_gguf import _big_gguf

    raw = _big_gguf()
    head = raw[:8 * 1024 * 1024]
    form = {"device": "rtx-4090", "engine": "llama.cpp", "batch": "1"}
    r = client.post("/estimate/result", files={"file": ("big.gguf", head)}, data={**form, "file_bytes": str(len(raw))})
    assert r.status_code == 200 and 'class="error"' not in r.text, r.text[:500]
    assert f"of a {len(raw):,}-byte file, as uploaded" in r.text and "tensor data not seen" in r.text
    cut = client.post("/estimate/result", files={"file": ("big.gguf", head)}, data=form)
    assert "truncated" in cut.text and "/uploads/" not in cut.text


@pytest.mark.parametrize("name, sent, file_bytes, says", [
    ("big.gguf", 8 * 1024 * 1024, "12abc", "file_bytes '12abc': expected the whole file's size in bytes"),
    ("big.gguf", 8 * 1024 * 1024, str(2**51), "expected the whole file's size in bytes"),
    ("big.gguf", 1000, "999999999", "expected the first 8,388,608 bytes of a larger file, or the whole file"),
    ("model.safetensors", 8 * 1024 * 1024, "999999999", "only a .gguf file is read from its first bytes"),
])
def test_a_head_that_does_not_add_up_is_refused_in_one_line(client, name, sent, file_bytes, says):
    r = client.post("/estimate/result", files={"file": (name, b"\0" * sent)},
                    data={"device": "rtx-4090", "file_bytes": file_bytes})
    assert says in r.text, r.text[:500]


@pytest.mark.parametrize("query, verdict, words", [
    # typical 7.75 GiB of 9.56 usable, the range's high end over it (tests/cli/test_estimate_fit_cli.py)
    ({"model": "qwen3-8b", "device": "rtx-3080-10gb", "engine": "llama.cpp", "quant": "q8_0", "prompt": "64",
      "output": "300"}, "may not fit", "May not fit: "),
    ({"model": "qwen3-8b", "device": "rtx-3080-12gb", "engine": "llama.cpp", "quant": "q6_k", "prompt": "5000",
      "output": "300"}, "fits", "Fits: "),
    ({"model": "llama-3.1-70b", "device": "rtx-4090", "engine": "llama.cpp", "quant": "q8_0"}, "does not fit",
     "Does not fit: "),
])
def test_the_estimate_view_shows_the_three_way_verdict_as_the_json_does(client, query, verdict, words):
    data = client.get("/api/estimate", params=query).json()
    assert data["fit"] == verdict
    r = client.post("/estimate/result", data=query)
    assert r.status_code == 200, r.text[:300]
    shown = r.text.split('id="fits"')[1].split("</p>")[0]
    assert f'data-fit="{verdict}"' in shown and words in shown
    if verdict == "may not fit":
        assert data["fit_note"] in shown and 'class="verdict warn"' in r.text
