"""The Starlette app: pages (Jinja2 + htmx partials) and the JSON API under /api/.

Every request first passes `guard.Guard` (Host, Origin, CSRF token, content type, sizes); every handler
that computes builds a CLI argv from the request (`forms.py`) and runs it in the worker pool
(`pool.py`: separate processes under `sizeup.sources`' policy, with a time limit), so a page shows and
/api/… returns what `sizeup … --json` prints for the same inputs. Bad input is a 4xx with the CLI's
one-line message; any other exception is a 500 with one line, and the server keeps serving.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import tempfile
import time
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse,
                                  Response)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from sizeup.sources import PREFIX_SUFFIX
from sizeup.ui.bridge import MAX_UPLOAD_BYTES, UiError, error_line, parse_json, scrub_paths, with_flags
from sizeup.ui.downloads import DOWNLOADS
from sizeup.ui.forms import (DEFAULTS, head_of, estimate_argv, fields_of, number_arg, plan_file_argv, plan_quick_argv,
                             train_argv)
from sizeup.ui.guard import Guard
from sizeup.ui.pool import DEFAULT_TIME_LIMIT_S, Lane, WorkerPool

__all__ = ["create_app"]

HERE = Path(__file__).parent
UPLOAD_SUFFIXES = (".json", ".safetensors", ".gguf")
MAX_FORM_FIELDS = 64
MAX_SHEETS = 256
MAX_RUN_ID = 2**63 - 1
SORT_KEYS = ("tokens_per_s", "usd_per_million_tokens", "usd_per_gpu_hour", "device_memory_bytes", "device", "name",
             "vendor")
"""The compare table's sortable columns (any other `sort` is the default)."""
"""Plans whose downloads the UI remembers (the oldest is forgotten first)."""


def create_app(workdir: str | Path | None = None, *, hosts: tuple[str, ...] = (),
               time_limit_s: float = DEFAULT_TIME_LIMIT_S, lanes: dict[str, Lane] | None = None) -> Guard:
    """The app; uploads, downloads and caches live only under `workdir` (default: a fresh temp dir).
    `hosts`: Host names accepted besides 127.0.0.1, localhost and [::1] (the bound host, --allowed-host)."""
    from sizeup.units import format_bytes, format_seconds

    work = Path(workdir or tempfile.mkdtemp(prefix="sizeup-ui-")).resolve()
    (work / "uploads").mkdir(parents=True, exist_ok=True)
    pool = WorkerPool(work, lanes=lanes, time_limit_s=time_limit_s)
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.filters["bytes"] = lambda v: "—" if v is None else format_bytes(v)
    templates.env.filters["secs"] = lambda v: "—" if v is None else format_seconds(v)
    templates.env.filters["num"] = lambda v, d=1: "—" if v is None else f"{v:,.{d}f}"
    scenarios: dict[str, list[str]] = {}  # download key -> plan argv (without --format/--out)
    menus: dict[str, list] = {}  # "presets", "devices": what the forms offer

    def page(request: Request, name: str, **ctx) -> HTMLResponse:
        return templates.TemplateResponse(request, name, ctx | {"csrf_token": request.state.csrf_token})

    async def choices() -> dict:
        """The presets and catalog devices the forms offer: read once, by a worker (the server process never
        loads the catalog, so it reads and writes no cache outside the UI's folder)."""
        if not menus:
            menus.update(await pool.call("quick", "choices"))
        return menus

    async def cli(lane: str, argv: list[str], ok_codes: tuple[int, ...] = (0,)) -> dict:
        result = await pool.call(lane, "cli", argv)
        return parse_json(argv[0], result["code"], result["out"], result["err"], ok_codes)

    async def cli_response(lane: str, argv: list[str], ok_codes: tuple[int, ...] = (0,)) -> Response:
        """The JSON the CLI printed, sent as it is (byte for byte the CLI's `--json`; the server parses nothing)."""
        result = await pool.call(lane, "cli", argv)
        if result["code"] not in ok_codes or not result["out"].strip():
            raise UiError(error_line(result["err"]))
        return Response(result["out"], media_type="application/json")

    async def body_capped(request: Request, limit: int = MAX_UPLOAD_BYTES + 65536) -> bytes:
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > limit:
            raise UiError(f"request of {int(length):,} bytes: larger than the {limit // 2**20} MiB the UI reads (send "
                          "a config.json or the header of a .safetensors / .gguf file)", 413)
        data = bytearray()
        async for chunk in request.stream():
            data += chunk
            if len(data) > limit:
                raise UiError(f"request: larger than the {limit // 2**20} MiB the UI reads", 413)
        request._body = bytes(data)  # Starlette's form parser reads the cached body
        return request._body

    async def form_of(request: Request):
        await body_capped(request)
        return await request.form(max_files=2, max_fields=MAX_FORM_FIELDS, max_part_size=MAX_UPLOAD_BYTES)

    def store(data: bytes, filename: str, whole: str = "") -> str:
        """`data` saved under the UI's uploads folder; the path goes to the worker, never to the browser. `whole`
        (the form's file_bytes) is the size of the file a .gguf upload is the head of (the page sends the first
        MAX_UPLOAD_BYTES of a larger one): recorded beside it, so its reader checks all the head holds and
        does not take the missing tensor data for a truncated file."""
        suffix = Path(filename).suffix.lower()
        if suffix not in UPLOAD_SUFFIXES + (".yaml", ".yml"):
            raise UiError(f"upload {filename[:80]!r}: expected a config.json, .safetensors or .gguf header, or a "
                          "scenario .yaml")
        if len(data) > MAX_UPLOAD_BYTES:
            raise UiError(f"upload {filename[:80]!r}: {len(data):,} bytes, more than {MAX_UPLOAD_BYTES:,}", 413)
        prefix_of = head_of(filename, suffix, len(data), whole)
        key = hashlib.sha256(data + (b"" if prefix_of is None else b"/prefix-of/%d" % prefix_of)).hexdigest()[:16]
        folder = work / "uploads" / key
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / ("config.json" if suffix == ".json" else f"upload{suffix}")
        path.write_bytes(data)
        if prefix_of is not None:
            Path(str(path) + PREFIX_SUFFIX).write_text(str(prefix_of), encoding="ascii")
        return str(path)

    async def form_model(request: Request) -> tuple[dict, str]:
        """The form fields and the model: an uploaded file (stored in the UI's folder) or a preset name."""
        form = await form_of(request)
        fields = fields_of(form.multi_items())
        whole = fields.pop("file_bytes", "")
        upload = form.get("file")
        if upload is not None and not isinstance(upload, str) and upload.filename:
            return fields, store(await upload.read(), upload.filename, whole)
        return fields, fields.get("model", "")

    def query(request: Request, defaults: dict | None = None) -> dict:
        return (defaults or {}) | fields_of(request.query_params.multi_items())

    # ---- estimate -------------------------------------------------------------------------------
    async def estimate_page(request: Request):
        params = query(request, DEFAULTS)
        result, error = await _attempt(cli("quick", estimate_argv(params["model"], params)))
        return page(request, "estimate.html", **await choices(), params=params,
                    result=result, error=error, memory_chart=_memory_chart(result))

    async def estimate_result(request: Request):
        if request.method == "POST":
            fields, model = await form_model(request)
            params = DEFAULTS | fields
        else:
            params = query(request, DEFAULTS)
            model = params["model"]
        result, error = await _attempt(cli("quick", estimate_argv(model, params)))
        return page(request, "_estimate_result.html", result=result, error=error, params=params,
                    memory_chart=_memory_chart(result))

    async def api_estimate(request: Request):  # the CLI's own defaults: same inputs, same JSON
        params = query(request)
        return await cli_response("quick", estimate_argv(params.get("model", ""), params))

    # ---- compare devices ------------------------------------------------------------------------
    async def compare_data(q: dict) -> dict:
        price = q.get("max_usd_per_hour") or None
        model = q.get("model", DEFAULTS["model"]).strip()
        if not model:
            raise UiError("model: expected a preset name (e.g. llama-3.1-8b)")
        options = dict(model=model, quant=q.get("quant") or None, engine=q.get("engine") or None,
                       batch=number_arg(q, "batch", 1), prompt=number_arg(q, "prompt", 512),
                       output=number_arg(q, "output", 128, minimum=0), vendor=q.get("vendor", ""),
                       kind=q.get("kind", ""),
                       min_memory_gib=number_arg(q, "min_memory_gib", 0, minimum=0, integer=False),
                       max_usd_per_hour=None if price is None else number_arg(q, "max_usd_per_hour", 0, minimum=0,
                                                                              integer=False))
        return await pool.call("quick", "compare", options)

    async def compare_page(request: Request):
        q = query(request, {"model": DEFAULTS["model"], "quant": DEFAULTS["quant"], "kind": "gpu"})
        data, error = await _attempt(compare_data(q))
        partial = "HX-Request" in request.headers
        return page(request, "_compare_result.html" if partial else "compare.html", q=q, data=data, error=error,
                    sort=q.get("sort") if q.get("sort") in SORT_KEYS else "tokens_per_s", chart=_chart(data),
                    **await choices())

    async def api_compare(request: Request):
        return JSONResponse(await compare_data(query(request)))

    # ---- train ----------------------------------------------------------------------------------
    async def train_page(request: Request):
        q = query(request, {"model": DEFAULTS["model"], "device": "h100-sxm-80gb", "tokens": "1e8", "seq": "2048"})
        data, error = await _attempt(cli("quick", train_argv(q["model"], q)))
        partial = "HX-Request" in request.headers
        return page(request, "_train_result.html" if partial else "train.html", q=q, data=data, error=error,
                    **await choices())

    async def api_train(request: Request):
        q = query(request)
        return await cli_response("quick", train_argv(q.get("model", ""), q))

    # ---- plan -----------------------------------------------------------------------------------
    async def plan_form_argv(request: Request) -> list[str]:
        form = await form_of(request)
        upload = form.get("file")
        if upload is not None and not isinstance(upload, str) and upload.filename:
            return plan_file_argv(store(await upload.read(), "scenario.yaml"))
        fields = fields_of(form.multi_items())
        text = fields.get("yaml", "")
        if text.strip():
            return plan_file_argv(store(text.encode(), "scenario.yaml"))
        return plan_quick_argv(fields.get("model", ""), fields)

    async def plan_json_argv(request: Request) -> list[str]:
        """POST /api/plan, application/json: {"scenario": YAML text or mapping}, or the quick fields."""
        try:
            data = json.loads(await body_capped(request, 1024 * 1024 + 65536))
        except (ValueError, RecursionError):
            raise UiError("body: not valid JSON (expected {\"scenario\": …} or the quick plan's fields)") from None
        if not isinstance(data, dict):
            raise UiError("body: expected a JSON object: {\"scenario\": YAML text or mapping} or the quick fields")
        scenario = data.get("scenario")
        if isinstance(scenario, (str, dict)):
            text = scenario if isinstance(scenario, str) else json.dumps(scenario)  # JSON is YAML
            fields_of({"scenario": text})
            return plan_file_argv(store(text.encode(), "scenario.yaml"))
        if scenario is not None:
            raise UiError("scenario: expected YAML text or a mapping")
        fields = fields_of((k, v if isinstance(v, str) else json.dumps(v)) for k, v in data.items())
        return plan_quick_argv(fields.get("model", ""), fields)

    async def plan_page(request: Request):
        return page(request, "plan.html", **await choices())

    async def plan_result(request: Request):
        argv = await plan_form_argv(request)
        start = time.monotonic()
        data, error = await _attempt(cli("long", with_flags(argv, "--format=json"), (0, 2)))
        key = hashlib.sha256("\0".join(argv).encode()).hexdigest()[:16]
        scenarios[key] = argv
        while len(scenarios) > MAX_SHEETS:
            scenarios.pop(next(iter(scenarios)))
        html = ""
        if data is not None:  # the sheet in the page: the rest of the request's time limit
            left = max(pool.time_limit_s - (time.monotonic() - start), 1.0)
            path, _ = await _attempt(pool.call("long", "plan_file", argv, "html", key, limit_s=left))
            html = Path(path).read_text() if path else ""
        return page(request, "_plan_result.html", data=data, error=error, key=key, sheet_html=html,
                    formats=list(DOWNLOADS))

    async def plan_download(request: Request):
        key, fmt = request.path_params["key"], request.path_params["fmt"]
        if key not in scenarios or fmt not in DOWNLOADS:
            raise UiError(f"download {key[:20]}.{fmt[:10]}: unknown sheet or format (expected one of "
                          f"{', '.join(DOWNLOADS)})", 404)
        path = await pool.call("long", "plan_file", scenarios[key], fmt, key)
        return FileResponse(path, media_type=DOWNLOADS[fmt], filename=f"sizeup-plan.{fmt}")

    async def api_plan(request: Request):
        return await cli_response("long", with_flags(await plan_json_argv(request), "--format=json"), (0, 2))

    # ---- runs -----------------------------------------------------------------------------------
    async def runs_page(request: Request):
        data, error = await _attempt(cli("quick", ["runs", "list", "--json"]))
        return page(request, "runs.html", data=data, error=error)

    def run_id_of(request: Request) -> str:
        run_id = request.path_params["run_id"]
        if run_id > MAX_RUN_ID:  # SQLite's largest row id: a longer number names no run
            raise UiError(f"run {str(run_id)[:30]}: no such run (ids are at most {MAX_RUN_ID})", 404)
        return str(run_id)

    async def run_page(request: Request):
        run_id = run_id_of(request)
        record, error = await _attempt(cli("quick", ["runs", "show", run_id, "--json"]))
        terms, terms_error = await _attempt(cli("quick", ["compare", run_id, "--json"]))
        return page(request, "run.html", record=record, error=error, terms=terms, terms_error=terms_error,
                    run_id=run_id)

    async def api_runs(request: Request):
        return await cli_response("quick", ["runs", "list", "--json"])

    async def api_run(request: Request):
        return await cli_response("quick", ["runs", "show", run_id_of(request), "--json"])

    async def api_run_compare(request: Request):
        return await cli_response("quick", ["compare", run_id_of(request), "--json"])

    async def api_session(request: Request):
        """The CSRF token of this session (the cookie comes with the answer): for API clients."""
        return JSONResponse({"csrf_token": request.state.csrf_token, "header": "X-CSRF-Token"})

    async def ui_error(request: Request, exc: UiError):
        return _error_response(request, exc.message, exc.status)

    async def server_error(request: Request, exc: Exception):
        from sizeup.errors import describe_error

        return _error_response(request, scrub_paths(describe_error(exc, context="sizeup ui").message), 500)

    routes = [
        Route("/", lambda request: RedirectResponse("/estimate")),
        Route("/estimate", estimate_page), Route("/estimate/result", estimate_result, methods=["GET", "POST"]),
        Route("/compare", compare_page), Route("/train", train_page),
        Route("/plan", plan_page), Route("/plan/result", plan_result, methods=["POST"]),
        Route("/plan/download/{key}.{fmt}", plan_download),
        Route("/runs", runs_page), Route("/runs/{run_id:int}", run_page),
        Route("/api/estimate", api_estimate), Route("/api/compare", api_compare), Route("/api/train", api_train),
        Route("/api/plan", api_plan, methods=["POST"]), Route("/api/runs", api_runs),
        Route("/api/runs/{run_id:int}", api_run), Route("/api/runs/{run_id:int}/compare", api_run_compare),
        Route("/api/session", api_session),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    @contextlib.asynccontextmanager
    async def lifespan(app):
        pool.start()
        try:
            yield
        finally:
            pool.close()

    app = Starlette(routes=routes, exception_handlers={UiError: ui_error, Exception: server_error}, lifespan=lifespan)
    guard = Guard(app, hosts=hosts)
    guard.pool = pool  # for tests and benchmarks: the workers behind this app
    return guard


def _error_response(request: Request, message: str, status: int):
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": message}, status_code=status)
    return PlainTextResponse(message, status_code=status)


async def _attempt(awaitable):
    """(value, None) or (None, the one-line message): a page shows a refused input next to the form."""
    try:
        return await awaitable, None
    except UiError as e:
        return None, e.message


def _chart(data: dict | None) -> str:
    """The compare chart (report.charts.scatter_svg): tokens/s against $ per million tokens, the cheapest ringed."""
    from sizeup.report.charts import Point, scatter_svg

    rows = [r for r in (data or {}).get("devices", []) if r.get("tokens_per_s") and r.get("usd_per_million_tokens")]
    if not rows:
        return ""
    cheapest = min(rows, key=lambda r: r["usd_per_million_tokens"])
    points = [Point(r["device"], r["usd_per_million_tokens"], r["tokens_per_s"],
                    "chosen" if r is cheapest else "option") for r in rows]
    return scatter_svg(points, "$ per million output tokens", "decode tokens/s",
                       f"{data['model']} ({data['quant']}): speed against cost", key="compare")


def _memory_chart(result: dict | None) -> str:
    """The estimate's memory stacked against usable (report.charts.memory_stack_svg)."""
    from sizeup.report.charts import memory_stack_svg

    if not result:
        return ""
    m = result["memory"]
    parts = {"weights": m["weights_bytes"], "KV cache": m["kv_cache_bytes"], "activations": m["activations_bytes"],
             **({"multimodal profile": m["multimodal_profile_bytes"]} if m.get("multimodal_profile_bytes") else {}),
             "overhead": m["overhead_bytes"]}
    return memory_stack_svg(parts, m["usable_bytes"], f"memory per GPU: {result['device']['name']}", key="memory")
