"""The UI as a hostile web page and a careless user would try it (issue 27): code execution through model
and module names, a file-existence oracle, DNS rebinding, CSRF, cross-site text/plain and form posts,
oversized fields, and one slow request holding up the others. Each is refused in one line and nothing ran."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("multipart")
from starlette.testclient import TestClient  # noqa: E402

from sizeup.ui.app import create_app  # noqa: E402

BASE = "http://127.0.0.1:8765"
VISION = "name: v\nmodel: {model}\ntask: vision\ninput_shape: 1x3x32x32\ntraffic: {{peak_requests_per_s: 1}}\n"
SERVING = "name: s\nmodel: {model}\ntask: api\ntraffic: {{peak_requests_per_s: 1}}\n"


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A Python file that leaves a mark when it runs, and a scratch TMPDIR the workers inherit."""
    root = tmp_path_factory.mktemp("attacker")
    (root / "evil.py").write_text(f"open({str(root / 'RAN')!r}, 'w').write('ran')\ndef build():\n    return None\n")
    (root / "tmp").mkdir()
    return root


@pytest.fixture(scope="module")
def ui(tmp_path_factory, planted):
    work = tmp_path_factory.mktemp("ui")
    old = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(planted / "tmp")  # tempfile:mkdtemp would create its folder here
    try:
        with TestClient(create_app(work), base_url=BASE, raise_server_exceptions=False) as c:
            c.headers.update({"origin": BASE, "x-csrf-token": c.get("/api/session").json()["csrf_token"]})
            yield c, work
    finally:
        os.environ.pop("TMPDIR") if old is None else os.environ.__setitem__("TMPDIR", old)


@pytest.fixture()
def client(ui):
    return ui[0]


def alive(client) -> bool:
    return client.get("/api/estimate", params={"model": "llama-3.1-8b", "device": "rtx-4090"}).status_code == 200


def one_line(r) -> str:
    message = r.json()["error"] if r.headers["content-type"].startswith("application/json") else r.text
    assert "\n" not in message and "Traceback" not in message and "bug in sizeup" not in message, message
    return message


# ---- code execution through model and module names -------------------------------------------------

@pytest.mark.parametrize("model", ["{root}/evil.py:build", "evil.py:build", "os:abort", "tempfile:mkdtemp",
                                   "sizeup.cli.main:main", "sizeup.examples.zoo:Conv.forward"])
def test_a_scenario_naming_code_is_refused_and_nothing_runs(client, planted, model):
    model = model.format(root=planted)
    r = client.post("/api/plan", json={"scenario": VISION.format(model=model)})
    assert r.status_code == 400 and "runs no user code" in one_line(r)
    assert not (planted / "RAN").exists() and not list((planted / "tmp").iterdir())
    assert alive(client)


@pytest.mark.parametrize("where", ["estimate", "compare", "train", "quick plan", "plan form", "scenario mapping"])
def test_every_route_refuses_a_code_target(client, planted, where):
    model = f"{planted}/evil.py:build"
    r = {"estimate": lambda: client.get("/api/estimate", params={"model": model}),
         "compare": lambda: client.get("/api/compare", params={"model": model}),
         "train": lambda: client.get("/api/train", params={"model": model, "device": "h100"}),
         "quick plan": lambda: client.post("/api/plan", json={"model": model, "users": 5}),
         "plan form": lambda: client.post("/plan/result", data={"model": model, "users": "5"}),
         "scenario mapping": lambda: client.post("/api/plan", json={"scenario": {
             "name": "m", "model": model, "task": "vision", "input_shape": "1x3x32x32",
             "traffic": {"peak_requests_per_s": 1}}})}[where]()
    assert r.status_code in (200, 400)  # the plan form answers a page that shows the refusal
    text = r.text if where == "plan form" else one_line(r)
    assert "runs no user code" in text and not (planted / "RAN").exists()


# ---- file-existence oracle -------------------------------------------------------------------------

@pytest.mark.parametrize("send", [
    lambda c, p: c.get("/api/estimate", params={"model": p, "device": "rtx-4090"}),
    lambda c, p: c.post("/api/plan", json={"scenario": SERVING.format(model=p)}),
    lambda c, p: c.post("/api/plan", json={"model": p, "users": 5}),
    lambda c, p: c.get("/api/compare", params={"model": p}),
], ids=["estimate", "scenario", "quick-plan", "compare"])
def test_an_existing_and_a_missing_file_answer_the_same(client, planted, send):
    answers = {(r.status_code, one_line(r)) for r in (send(client, p) for p in (
        "/etc/passwd", "/etc/nonexistent", str(planted / "evil.py"), str(planted / "missing.json"),
        "../../../../etc/passwd", "~/.bashrc"))}
    assert len(answers) == 1, answers
    status, message = answers.pop()
    assert status == 400 and "files are uploaded" in message and "etc" not in message


def test_a_scenario_path_in_a_quick_plan_is_not_opened(client):
    answers = {one_line(client.post("/api/plan", json={"model": p})) for p in ("/etc/passwd.yaml", "/no/such.yaml")}
    assert len(answers) == 1 and "files are uploaded" in answers.pop()


def test_errors_never_show_where_the_server_keeps_files(ui):
    client, work = ui
    r = client.post("/estimate/result", files={"file": ("config.json", b"{not json")}, data={"device": "rtx-4090"})
    assert r.status_code == 200 and "config.json" in r.text and str(work) not in r.text and "/uploads/" not in r.text
    r = client.post("/api/plan", json={"scenario": "name: x\nmodel: [unclosed\n"})
    assert r.status_code == 400 and "not valid YAML" in r.text and str(work) not in r.text and "/uploads/" not in r.text


# ---- DNS rebinding: the Host header -----------------------------------------------------------------

@pytest.mark.parametrize("host", ["evil.example:8765", "evil.example", "127.0.0.1.evil.example", "localhost.evil:1",
                                  "127.0.0.2:8765", "", "127.0.0.1:80@evil", "[::2]:8765"])
@pytest.mark.parametrize("path", ["/api/estimate?model=llama-3.1-8b", "/estimate", "/static/style.css",
                                  "/api/session"])
def test_a_foreign_host_header_is_refused_on_every_path(client, host, path):
    r = client.get(path, headers={"host": host})
    assert r.status_code == 421 and "csrf_token" not in r.text and "llama" not in r.text


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "localhost:8765", "[::1]:8765", "LOCALHOST", "127.0.0.1"])
def test_loopback_names_are_served(client, host):
    assert client.get("/static/style.css", headers={"host": host}).status_code == 200


def test_an_allowed_host_is_served(tmp_path):
    app = create_app(tmp_path, hosts=("sizeup.lan",))
    with TestClient(app, base_url="http://sizeup.lan:8765") as c:
        assert c.get("/static/style.css").status_code == 200
        assert c.get("/static/style.css", headers={"host": "other.lan"}).status_code == 421


# ---- CSRF: Origin, Referer, token, content type ----------------------------------------------------

def _post(client, path: str, *, drop=(), **headers):
    """POST as the UI's own pages do, less the headers in `drop`, with `headers` on top."""
    if path.startswith("/api/"):
        request = client.build_request("POST", path, content=json.dumps({"model": "llama-3.1-8b", "users": 5}),
                                       headers={"content-type": "application/json"} | headers)
    else:
        request = client.build_request("POST", path, data={"model": "llama-3.1-8b", "device": "rtx-4090"},
                                       headers=headers)
    for name in drop:
        del request.headers[name]
    return client.send(request)


@pytest.mark.parametrize("path", ["/api/plan", "/plan/result", "/estimate/result"])
@pytest.mark.parametrize("case", ["no origin", "foreign origin", "other port", "null origin", "foreign referer",
                                  "cross-site fetch", "no token", "wrong token", "odd token", "no cookie"])
def test_a_state_changing_request_from_elsewhere_is_refused(ui, path, case):
    client, work = ui
    before = sorted((work / "uploads").rglob("*"))
    drop = {"no origin": ("origin",), "foreign referer": ("origin",), "no token": ("x-csrf-token",)}.get(case, ())
    headers = {"foreign origin": {"origin": "http://evil.example"}, "other port": {"origin": "http://127.0.0.1:9999"},
               "null origin": {"origin": "null"}, "foreign referer": {"referer": "http://evil.example/page"},
               "cross-site fetch": {"sec-fetch-site": "cross-site"}, "wrong token": {"x-csrf-token": "0" * 64},
               "odd token": {"x-csrf-token": b"\xe9" * 64},
               }.get(case, {})
    if case == "no cookie":
        fresh = TestClient(client.app, base_url=BASE)  # no lifespan: the module's pool stays open
        r = _post(fresh, path, **{k: v for k, v in client.headers.items() if k.lower() in ("origin", "x-csrf-token")})
    else:
        r = _post(client, path, drop=drop, **headers)
    assert r.status_code == 403 and "refused" in one_line(r)
    assert sorted((work / "uploads").rglob("*")) == before  # nothing stored, nothing run


def test_a_same_origin_referer_stands_in_for_a_missing_origin(client):
    r = _post(client, "/api/plan", drop=("origin",), referer=f"{BASE}/plan")
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("ctype, body", [
    ("text/plain", SERVING.format(model="llama-3.1-8b")),
    ("application/x-www-form-urlencoded", "model=llama-3.1-8b&users=5"),
    ("multipart/form-data; boundary=x",
     "--x\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nllama-3.1-8b\r\n--x--"),
    ("application/yaml", SERVING.format(model="llama-3.1-8b")),
])
def test_the_json_api_refuses_simple_request_content_types(client, ctype, body):
    """A cross-site page can send these three types without a preflight; the API takes none of them, even
    with a valid origin and token, and a cross-site one is refused before that."""
    r = client.post("/api/plan", content=body, headers={"content-type": ctype})
    assert r.status_code == 415 and "application/json" in one_line(r)
    r = client.post("/api/plan", content=body, headers={"content-type": ctype, "origin": "http://evil.example"})
    assert r.status_code == 403


def test_every_answer_carries_the_security_headers(client):
    for r in (client.get("/estimate"), client.get("/static/style.css"), client.get("/api/estimate?model=nope"),
              client.get("/x", headers={"host": "evil.example"})):
        assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["cross-origin-resource-policy"] == "same-origin"
    foreign = client.get("/api/runs", headers={"origin": "http://evil.example"})
    assert "access-control-allow-origin" not in foreign.headers


def test_the_session_cookie_is_httponly_and_samesite_strict(tmp_path):
    with TestClient(create_app(tmp_path), base_url=BASE) as c:
        cookie = c.get("/estimate").headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie


# ---- oversized fields --------------------------------------------------------------------------------

@pytest.mark.parametrize("send, status", [
    (lambda c: c.post("/estimate/result", data={"model": "llama-3.1-8b", "device": "x" * 100_000}), 413),
    (lambda c: c.post("/api/plan", json={"model": "llama-3.1-8b", "devices": "x" * 100_000}), 413),
    (lambda c: c.post("/api/plan", json={"model": "m" * 5000}), 413),
    (lambda c: c.get("/api/estimate", params={"model": "llama-3.1-8b", "device": "x" * 7000}), 413),
    (lambda c: c.get("/api/estimate?model=llama-3.1-8b&device=" + "x" * 20_000), 414),
    (lambda c: c.get("/api/estimate?" + "&".join(f"f{i}=1" for i in range(100))), 414),
    (lambda c: c.post("/api/plan", json={"scenario": "name: " + "x" * 1_100_000}), 413),
    (lambda c: c.post("/api/plan", json={"scenario": {"name": "s", "model": "llama-3.1-8b", "task": "api",
                                                       "traffic": {"users": 5},
                                                       "constraints": {"devices": ["x" * 100_000]}}}), 400),
], ids=["form-device", "json-devices", "json-model", "query-device", "query-string", "query-fields", "yaml",
        "scenario-device"])
def test_oversized_fields_are_refused_at_once(client, send, status):
    import time

    start = time.perf_counter()
    r = send(client)
    assert r.status_code == status and time.perf_counter() - start < 5
    assert len(one_line(r)) < 400
    assert alive(client)


def test_a_255_character_device_name_is_answered_quickly(client):
    import time

    start = time.perf_counter()
    r = client.get("/api/estimate", params={"model": "llama-3.1-8b", "device": "zq9 " * 63})
    assert r.status_code == 400 and "unknown device" in one_line(r) and time.perf_counter() - start < 5


@pytest.mark.parametrize("site, mode, dest, status", [
    ("cross-site", "cors", "empty", 403), ("same-site", "no-cors", "image", 403),
    ("cross-site", "navigate", "iframe", 403), ("cross-site", "navigate", "document", 200),
    ("same-origin", "cors", "empty", 200), ("none", "navigate", "document", 200),
])
def test_other_sites_may_link_to_a_page_but_not_fetch_embed_or_frame_it(client, site, mode, dest, status):
    r = client.get("/api/estimate", params={"model": "llama-3.1-8b", "device": "rtx-4090"},
                   headers={"sec-fetch-site": site, "sec-fetch-mode": mode, "sec-fetch-dest": dest})
    assert r.status_code == status


def test_a_huge_run_id_is_a_404_in_one_line(client):
    for path in ("/api/runs/99999999999999999999999", "/api/runs/99999999999999999999999/compare"):
        r = client.get(path)
        assert r.status_code == 404 and "no such run" in one_line(r)
