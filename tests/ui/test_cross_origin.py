"""A hostile page in a real browser (Chromium) attacks the UI from another origin: fetches (text/plain,
JSON, reads), HTML form posts (multipart, text/plain JSON, urlencoded) and a DNS-rebound name. Every
attempt is refused by the UI, no answer is readable by the page, nothing is stored and no code runs.

The attacker's page is served from a second local origin: another port of 127.0.0.1 (the same *site*,
so the session cookie goes along) and `attacker.test`, a name Chromium resolves to 127.0.0.1 (another
site); `rebound.test` plays a DNS-rebinding name pointed at the UI itself.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("no system Chromium at /usr/bin/chromium (install it from the OS packages)", allow_module_level=True)
pytest.importorskip("playwright.sync_api")
pytest.importorskip("uvicorn")
from playwright.sync_api import sync_playwright  # noqa: E402

from sizeup.ui.app import create_app  # noqa: E402
from tests.ui.server import free_port, serve  # noqa: E402

ATTACK = """<!doctype html><html><body>
<iframe name="sink1"></iframe><iframe name="sink2"></iframe><iframe name="sink3"></iframe>
<form id="multipart" method="POST" action="{ui}/plan/result" enctype="multipart/form-data" target="sink1">
 <input name="yaml" value="{yaml}"></form>
<form id="textjson" method="POST" action="{ui}/api/plan" enctype="text/plain" target="sink2">
 <input name='{{"scenario": "' value='{yaml_json}"}}'></form>
<form id="urlencoded" method="POST" action="{ui}/estimate/result" target="sink3">
 <input name="model" value="{evil}"><input name="device" value="rtx-4090"></form>
<script src="/attack.js"></script></body></html>"""

SCRIPT = """
const ui = %(ui)s, yaml = %(yaml)s, evil = %(evil)s;
const results = {};
async function attempt(name, run) {
  try {
    const r = await run();
    results[name] = r.type + ":" + r.status + ":" + (r.type === "opaque" ? "" : await r.text());
  }
  catch (e) { results[name] = "blocked:" + e.name; }
}
(async () => {
  await attempt("text-plain", () => fetch(ui + "/api/plan", {method: "POST", mode: "no-cors", credentials: "include",
                                                            headers: {"Content-Type": "text/plain"}, body: yaml}));
  await attempt("json", () => fetch(ui + "/api/plan", {method: "POST", credentials: "include",
                headers: {"Content-Type": "application/json"}, body: JSON.stringify({scenario: yaml})}));
  await attempt("form-fetch", () => fetch(ui + "/plan/result", {method: "POST", mode: "no-cors", credentials: "include",
                body: new URLSearchParams({model: evil, users: "5"})}));
  await attempt("read-session", () => fetch(ui + "/api/session", {credentials: "include"}));
  await attempt("read-estimate", () => fetch(ui + "/api/estimate?model=llama-3.1-8b&device=rtx-4090"));
  for (const id of ["multipart", "textjson", "urlencoded"]) document.getElementById(id).submit();
  window.results = results;
})();
"""


class Recorder:
    """Wraps the UI's app: every request with its method, path, Sec-Fetch-Site and answer status."""

    def __init__(self, app) -> None:
        self.app, self.seen = app, []

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        status = {}

        async def record(message):
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        await self.app(scope, receive, record)
        headers = dict(scope["headers"])
        self.seen.append((scope["method"], scope["path"], headers.get(b"sec-fetch-site", b"").decode(),
                          status.get("code")))


def attacker_server(port: int, ui: str, evil: str):
    yaml = f"name: x\nmodel: {evil}\ntask: vision\ninput_shape: 1x3x32x32\ntraffic: {{peak_requests_per_s: 1}}\n"
    page = ATTACK.format(ui=ui, evil=evil, yaml=yaml.replace('"', "&quot;").replace("\n", "&#10;"),
                         yaml_json=json.dumps(yaml)[1:-1]).encode()
    script = (SCRIPT % {"ui": json.dumps(ui), "yaml": json.dumps(yaml), "evil": json.dumps(evil)}).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 — http.server's naming
            body, ctype = (script, "text/javascript") if self.path == "/attack.js" else (page, "text/html")
            self.send_response(200)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("cross")
    (root / "evil.py").write_text(f"open({str(root / 'RAN')!r}, 'w').write('ran')\ndef build():\n    return None\n")
    work = root / "ui"
    recorder = Recorder(create_app(work))
    with serve(recorder) as ui, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=[
            "--no-sandbox", "--host-resolver-rules=MAP attacker.test 127.0.0.1, MAP rebound.test 127.0.0.1"])
        yield {"ui": ui, "root": root, "work": work, "recorder": recorder, "browser": browser}
        browser.close()


@pytest.mark.parametrize("attacker_host", ["127.0.0.1", "attacker.test"], ids=["other-port", "other-site"])
def test_a_page_from_another_origin_cannot_use_the_ui(setup, attacker_host):
    ui, root, recorder = setup["ui"], setup["root"], setup["recorder"]
    port = free_port()
    server = attacker_server(port, ui, f"{root}/evil.py:build")
    context = setup["browser"].new_context()
    try:
        page = context.new_page()
        page.goto(f"{ui}/estimate")  # the victim has the UI open: its session cookie is in the browser
        assert page.locator("#figures").count() == 1
        recorder.seen.clear()
        page.goto(f"http://{attacker_host}:{port}/")
        page.wait_for_function("window.results !== undefined", timeout=60_000)
        results = page.evaluate("window.results")
        page.wait_for_timeout(1500)  # the three form posts land in their frames
    finally:
        context.close()
        server.shutdown()
    assert all(r.startswith("blocked:") for r in results.values()), results  # no answer reaches the page
    assert {s[0] for s in recorder.seen} == {"POST", "OPTIONS", "GET"}  # every attempt reached the UI
    posts = [s for s in recorder.seen if s[0] == "POST"]
    assert {p[1] for p in posts} == {"/api/plan", "/plan/result", "/estimate/result"}, recorder.seen
    assert all(code in (403, 415) for *_, code in posts), posts
    others = [s for s in recorder.seen if s[0] != "POST"]
    assert all(code == 403 for *_, code in others), others  # reads and the JSON preflight: refused too
    assert not (root / "RAN").exists()
    assert not [p for p in (setup["work"] / "uploads").rglob("*") if p.is_file()]


def test_a_dns_rebound_name_reads_nothing(setup):
    """`rebound.test` resolves to the UI's own address, as an attacker's name does after rebinding: the
    page would be same-origin with the UI, but the UI answers no request made under that name."""
    ui, recorder = setup["ui"], setup["recorder"]
    port = ui.rsplit(":", 1)[1]
    context = setup["browser"].new_context()
    try:
        page = context.new_page()
        recorder.seen.clear()
        for path in ("/estimate", "/api/session", "/api/estimate?model=llama-3.1-8b"):
            r = page.goto(f"http://rebound.test:{port}{path}")
            assert r.status == 421 and "csrf_token" not in page.content() and "llama" not in page.content()
        status = page.evaluate("fetch('/api/plan', {method: 'POST', headers: {'Content-Type': 'application/json'}, "
                               "body: JSON.stringify({model: 'llama-3.1-8b'})}).then(r => r.status)")
        assert status == 421
    finally:
        context.close()
    assert len(recorder.seen) >= 4 and {s[3] for s in recorder.seen} == {421}  # the favicon too
