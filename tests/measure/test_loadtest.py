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
