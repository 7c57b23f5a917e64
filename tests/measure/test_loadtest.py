"""The load test against the reference server on 127.0.0.1, and against servers that fail or hang."""

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

pytest.importorskip("httpx")
pytest.importorskip("torch")

from sizeup.errors import ConfigError, MeasureError  # noqa: E402
from sizeup.measure.loadtest import LoadConfig, run_load  # noqa: E402
from sizeup.measure.serve import serve  # noqa: E402


@pytest.fixture(scope="module")
def server():
    httpd = serve("llama-3.2-1b", port=0, tiny=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1/chat/completions"
    httpd.shutdown()
    httpd.server_close()


def test_streaming_load_percentiles_match_the_recorded_timings(server):
    result = run_load(LoadConfig(url=server, concurrency=3, requests=24, duration_s=30, max_tokens=8))
    data = result.to_dict()
    assert data["ok"] == 24 and data["errors"] == {}
    ttft = [r.ttft_s for r in result.records]
    e2e = [r.e2e_s for r in result.records]
    for key, q in (("p50", 50), ("p95", 95), ("p99", 99), ("p999", 99.9)):
        assert data["ttft_s"][key] == pytest.approx(float(np.percentile(ttft, q)))
        assert data["e2e_s"][key] == pytest.approx(float(np.percentile(e2e, q)))
    assert all(r.ttft_s < r.e2e_s for r in result.records)  # streaming: the first token comes before the end
    assert all(r.tokens == 8 for r in result.records)
    assert data["token_throughput_per_s"] > 0


def test_open_loop_rate_is_bounded_in_time(server):
    start = time.perf_counter()
    result = run_load(LoadConfig(url=server, rate=20, duration_s=1.5, max_tokens=4))
    assert time.perf_counter() - start < 10
    assert 10 <= len(result.records) <= 60 and result.to_dict()["ok"] == len(result.records)


class _Bad(BaseHTTPRequestHandler):
    mode = "500"

    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802
        if self.mode == "hang":
            time.sleep(5)
            return
        self.send_response(500)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.mark.parametrize("mode, kind", [("500", "http_500"), ("hang", "timeout")])
def test_failing_or_hanging_servers_are_counted_and_the_test_ends_on_time(mode, kind):
    handler = type("Handler", (_Bad,), {"mode": mode})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        start = time.perf_counter()
        result = run_load(LoadConfig(url=f"http://127.0.0.1:{httpd.server_address[1]}/v1/chat/completions",
                                     concurrency=2, duration_s=1.0, timeout_s=1.0))
        assert time.perf_counter() - start < 6
        errors = result.to_dict()["errors"]
        assert errors.get(kind, 0) >= 1 and result.to_dict()["ok"] == 0
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_unreachable_url_fails_fast():
    start = time.perf_counter()
    with pytest.raises(MeasureError, match="cannot reach http://127.0.0.1:9/"):
        run_load(LoadConfig(url="http://127.0.0.1:9/v1/chat/completions", rate=1, duration_s=2))
    assert time.perf_counter() - start < 5


def test_bad_load_configs():
    with pytest.raises(ConfigError, match="exactly one of --rate"):
        LoadConfig(url="http://127.0.0.1:1/x", duration_s=1)
    with pytest.raises(ConfigError, match="expected http://HOST:PORT"):
        LoadConfig(url="ftp://x", rate=1)


def test_load_run_is_compared_with_the_plan_sla(server, tmp_path, capsys):
    import json

    from sizeup.cli.main import main

    scenario = tmp_path / "sla.yaml"
    scenario.write_text("name: tiny\nmodel: llama-3.2-1b\ntask: api\ntraffic: {peak_requests_per_s: 1}\n"
                        "sla: {ttft_p95_s: 30, tpot_p95_s: 0.000001}\n")
    db = str(tmp_path / "runs.sqlite")
    assert main(["load", server, "--concurrency", "2", "--requests", "6", "--max-tokens", "4", "--sla",
                 str(scenario), "--db", db, "--json"]) == 0
    loaded = json.loads(capsys.readouterr().out)
    assert main(["compare", str(loaded["run_id"]), "--db", db, "--json"]) == 0
    compared = json.loads(capsys.readouterr().out)
    assert compared["sla"]["ttft_p95"]["measured_s"] == pytest.approx(loaded["ttft_s"]["p95"])
    assert compared["sla"]["ttft_p95"]["met"] is True  # 30 s is generous
    assert compared["sla"]["tpot_p95"]["met"] is False and compared["all_met"] is False  # 1 µs is not
    assert main(["compare", str(loaded["run_id"]), "--db", db]) == 0
    text = capsys.readouterr().out
    assert "SLA TTFT p95: promised 30 s" in text and "MISSED" in text


def test_leak_watch_on_the_reference_server_under_load(tmp_path):
    """The watch samples a real serving process while the load test drives it."""
    import os
    import subprocess
    import sys

    from sizeup.measure.leak import watch

    port_file = tmp_path / "port"
    code = ("import sys; from sizeup.measure.serve import serve; s = serve('llama-3.2-1b', port=0, tiny=True); "
            f"open({str(port_file)!r}, 'w').write(str(s.server_address[1])); s.serve_forever()")
    proc = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        url = f"http://127.0.0.1:{port_file.read_text()}/v1/chat/completions"
        load = threading.Thread(target=run_load, args=(LoadConfig(url=url, concurrency=2, duration_s=3,
                                                                  max_tokens=4),))
        load.start()
        result = watch(pid=proc.pid, interval_s=0.2, duration_s=3)
        load.join()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert len(result.samples) >= 10 and all(s.rss_bytes > 10 * 2**20 for s in result.samples)
    assert result.status.value in ("stable", "leaking", "inconclusive") and result.verdict


def test_url_credentials_are_used_but_never_stored_or_printed(server, tmp_path, capsys):
    """`load http://user:pw@host/…?api_key=…`: the requests go to the URL as typed; the run store, --json, the
    table and `runs export` hold `***` in place of the password and the key (issue 27 red team)."""
    import json
    import sqlite3

    from sizeup.cli.main import main

    secret_url = server.replace("http://", "http://alice:hunter2@") + "?api_key=sk-LIVE-123&api-version=2024-02-01"
    db = tmp_path / "runs.sqlite"
    assert main(["load", secret_url, "--concurrency", "1", "--requests", "2", "--max-tokens", "2", "--db", str(db),
                 "--json"]) == 0
    loaded = json.loads(capsys.readouterr().out)
    assert loaded["ok"] == 2  # the credentials did not get in the way of the requests
    assert loaded["url"] == server.replace("http://", "http://***@") + "?api_key=***&api-version=2024-02-01"
    assert main(["runs", "export", str(loaded["run_id"]), "--format", "json", "--db", str(db)]) == 0
    assert main(["runs", "list", "--db", str(db)]) == 0
    shown = capsys.readouterr().out
    with sqlite3.connect(db) as conn:
        stored = "\n".join(str(row) for table in ("runs", "points") for row in conn.execute(f"SELECT * FROM {table}"))
    for text in (shown, stored):
        assert "hunter2" not in text and "sk-LIVE-123" not in text and "alice" not in text
    assert "api_key=***" in stored
