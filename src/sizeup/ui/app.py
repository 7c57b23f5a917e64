"""The Starlette app: pages (Jinja2 + htmx partials) and the JSON API under /api/.

Every handler builds a CLI argv from the request and runs it through `bridge.cli_json`, so a page shows
and /api/… returns what `sizeup … --json` prints for the same inputs. Bad input is a 4xx with the CLI's
one-line message; any other exception is a 500 with one line, and the server keeps serving.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from sizeup.ui.bridge import MAX_UPLOAD_BYTES, UiError, check_model, cli_json, cli_run, error_line
from sizeup.ui.forms import (DEFAULTS, estimate_argv, number_arg, plan_quick_argv, train_argv)

__all__ = ["create_app"]

HERE = Path(__file__).parent
UPLOAD_SUFFIXES = (".json", ".safetensors", ".gguf")
DOWNLOADS = {"html": "text/html", "md": "text/markdown", "json": "application/json",
             "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
             "zip": "application/zip"}
"""The sheet's formats, and `zip`: the Kubernetes manifests of `sizeup plan … --deploy DIR`, zipped."""


def create_app(workdir: str | Path | None = None) -> Starlette:
    """The app; uploads and downloads live only under `workdir` (default: a fresh temp dir)."""
    from sizeup.units import format_bytes, format_seconds

    work = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="sizeup-ui-"))
    work.mkdir(parents=True, exist_ok=True)
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.filters["bytes"] = lambda v: "—" if v is None else format_bytes(v)
    templates.env.filters["secs"] = lambda v: "—" if v is None else format_seconds(v)
    templates.env.filters["num"] = lambda v, d=1: "—" if v is None else f"{v:,.{d}f}"
    scenarios: dict[str, list[str]] = {}  # download key -> plan argv (without --format/--out)

    def page(request: Request, name: str, **ctx) -> HTMLResponse:
        return templates.TemplateResponse(request, name, ctx)

    async def body_capped(request: Request) -> bytes:
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > MAX_UPLOAD_BYTES + 65536:
            raise UiError(f"upload of {int(length):,} bytes: larger than the {MAX_UPLOAD_BYTES // 2**20} MiB the "
                          "UI reads (send a config.json or the header of a .safetensors / .gguf file)", 413)
        data = bytearray()
        async for chunk in request.stream():
            data += chunk
            if len(data) > MAX_UPLOAD_BYTES + 65536:
                raise UiError(f"upload: larger than the {MAX_UPLOAD_BYTES // 2**20} MiB the UI reads", 413)
        request._body = bytes(data)  # Starlette's form parser reads the cached body
        return request._body

    def store(data: bytes, filename: str) -> Path:
        suffix = Path(filename).suffix.lower()
        if suffix not in UPLOAD_SUFFIXES + (".yaml", ".yml"):
            raise UiError(f"upload {filename!r}: expected a config.json, .safetensors or .gguf header, or a "
                          "scenario .yaml")
        if len(data) > MAX_UPLOAD_BYTES:
            raise UiError(f"upload {filename!r}: {len(data):,} bytes, more than {MAX_UPLOAD_BYTES:,}", 413)
        key = hashlib.sha256(data).hexdigest()[:16]
        folder = work / "uploads" / key
        folder.mkdir(parents=True, exist_ok=True)
        name = "config.json" if suffix == ".json" else f"upload{suffix}"
        path = folder / name
        path.write_bytes(data)
        return path

    async def form_model(request: Request) -> tuple[dict, str]:
        """The form fields and the model: an uploaded file (stored in the temp dir) or a preset."""
        await body_capped(request)
        form = await request.form(max_part_size=MAX_UPLOAD_BYTES)
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        upload = form.get("file")
        if upload is not None and not isinstance(upload, str) and upload.filename:
            return fields, str(store(await upload.read(), upload.filename))
        return fields, check_model(fields.get("model", ""))

    # ---- estimate -------------------------------------------------------------------------------
    async def estimate_page(request: Request):
        from sizeup.ingest.load import list_presets

        params = DEFAULTS | dict(request.query_params)
        result, error = _try(lambda: cli_json(estimate_argv(check_model(params["model"]), params)))
        return page(request, "estimate.html", params=params, presets=list_presets(), devices=_devices(),
                    result=result, error=error, memory_chart=_memory_chart(result))

    async def estimate_result(request: Request):
        if request.method == "POST":
            fields, model = await form_model(request)
            params = DEFAULTS | fields
        else:
            params = DEFAULTS | dict(request.query_params)
            model = check_model(params["model"])
        result, error = _try(lambda: cli_json(estimate_argv(model, params)))
        return page(request, "_estimate_result.html", result=result, error=error, params=params,
                    memory_chart=_memory_chart(result))

    async def api_estimate(request: Request):  # the CLI's own defaults: same inputs, same JSON
        params = dict(request.query_params)
        return JSONResponse(cli_json(estimate_argv(check_model(params.get("model", "")), params)))

    # ---- compare devices ------------------------------------------------------------------------
    def compare_data(q) -> dict:
        from sizeup.ui.compare import compare_devices

        price = q.get("max_usd_per_hour") or None
        return compare_devices(check_model(q.get("model", DEFAULTS["model"])), quant=q.get("quant") or None,
                               engine=q.get("engine") or None, batch=number_arg(q, "batch", 1),
                               prompt=number_arg(q, "prompt", 512), output=number_arg(q, "output", 128, minimum=0),
                               vendor=q.get("vendor", ""), kind=q.get("kind", ""),
                               min_memory_gib=number_arg(q, "min_memory_gib", 0, minimum=0, integer=False),
                               max_usd_per_hour=None if price is None else number_arg(q, "max_usd_per_hour", 0,
                                                                                      minimum=0, integer=False))

    async def compare_page(request: Request):
        q = {"model": DEFAULTS["model"], "quant": DEFAULTS["quant"], "kind": "gpu"} | dict(request.query_params)
        data, error = _try(lambda: compare_data(q))
        partial = "HX-Request" in request.headers
        return page(request, "_compare_result.html" if partial else "compare.html", q=q, data=data, error=error,
                    sort=q.get("sort", "tokens_per_s"), chart=_chart(data), presets=_presets())

    async def api_compare(request: Request):
        return JSONResponse(compare_data(dict(request.query_params)))

    # ---- train ----------------------------------------------------------------------------------
    async def train_page(request: Request):
        q = {"model": DEFAULTS["model"], "device": "h100-sxm-80gb", "tokens": "1e8", "seq": "2048"} | \
            dict(request.query_params)
        data, error = _try(lambda: cli_json(train_argv(check_model(q["model"]), q)))
        partial = "HX-Request" in request.headers
        return page(request, "_train_result.html" if partial else "train.html", q=q, data=data, error=error,
                    devices=_devices(), presets=_presets())

    async def api_train(request: Request):
        q = dict(request.query_params)
        return JSONResponse(cli_json(train_argv(check_model(q.get("model", "")), q)))

    # ---- plan -----------------------------------------------------------------------------------
    async def plan_argv_of(request: Request) -> list[str]:
        ctype = request.headers.get("content-type", "")
        data = await body_capped(request)
        if ctype.startswith(("application/yaml", "text/yaml", "application/x-yaml", "text/plain")):
            return ["plan", str(store(data, "scenario.yaml"))]
        form = await request.form(max_part_size=MAX_UPLOAD_BYTES)
        upload = form.get("file")
        if upload is not None and not isinstance(upload, str) and upload.filename:
            return ["plan", str(store(await upload.read(), "scenario.yaml"))]
        text = form.get("yaml")
        if isinstance(text, str) and text.strip():
            return ["plan", str(store(text.encode(), "scenario.yaml"))]
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        return plan_quick_argv(check_model(fields.get("model", "")), fields)

    def run_plan(argv: list[str]) -> dict:
        return cli_json([*argv, "--format", "json"], ok_codes=(0, 2))  # 2: nothing meets the targets

    async def plan_page(request: Request):
        return page(request, "plan.html", presets=_presets(), devices=_devices())

    async def plan_result(request: Request):
        argv = await plan_argv_of(request)
        data, error = _try(lambda: run_plan(argv))
        key = hashlib.sha256("\0".join(argv).encode()).hexdigest()[:16]
        scenarios[key] = argv
        html, _ = _try(lambda: _plan_file(argv, "html", work / "downloads" / key))
        return page(request, "_plan_result.html", data=data, error=error, key=key,
                    sheet_html=html.read_text() if html else "", formats=list(DOWNLOADS))

    async def plan_download(request: Request):
        key, fmt = request.path_params["key"], request.path_params["fmt"]
        if key not in scenarios or fmt not in DOWNLOADS:
            raise UiError(f"download {key}.{fmt}: unknown sheet or format (expected one of {', '.join(DOWNLOADS)})",
                          404)
        path = _plan_file(scenarios[key], fmt, work / "downloads" / key)
        return FileResponse(path, media_type=DOWNLOADS[fmt], filename=f"sizeup-plan.{fmt}")

    async def api_plan(request: Request):
        return JSONResponse(run_plan(await plan_argv_of(request)))

    # ---- runs -----------------------------------------------------------------------------------
    async def runs_page(request: Request):
        data, error = _try(lambda: cli_json(["runs", "list", "--json"]))
        return page(request, "runs.html", data=data, error=error)

    async def run_page(request: Request):
        run_id = request.path_params["run_id"]
        record, error = _try(lambda: cli_json(["runs", "show", str(run_id), "--json"]))
        terms, terms_error = _try(lambda: cli_json(["compare", str(run_id), "--json"]))
        return page(request, "run.html", record=record, error=error, terms=terms, terms_error=terms_error,
                    run_id=run_id)

    async def api_runs(request: Request):
        return JSONResponse(cli_json(["runs", "list", "--json"]))

    async def api_run(request: Request):
        return JSONResponse(cli_json(["runs", "show", str(request.path_params["run_id"]), "--json"]))

    async def api_run_compare(request: Request):
        return JSONResponse(cli_json(["compare", str(request.path_params["run_id"]), "--json"]))

    async def ui_error(request: Request, exc: UiError):
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": exc.message}, status_code=exc.status)
        return PlainTextResponse(exc.message, status_code=exc.status)

    async def server_error(request: Request, exc: Exception):
        from sizeup.errors import describe_error

        message = describe_error(exc, context="sizeup ui").message
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": message}, status_code=500)
        return PlainTextResponse(message, status_code=500)

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
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    return Starlette(routes=routes, exception_handlers={UiError: ui_error, Exception: server_error})


def _try(func):
    """(value, None) or (None, the one-line message): a page shows a refused input next to the form."""
    try:
        return func(), None
    except UiError as e:
        return None, e.message


def _plan_file(argv: list[str], fmt: str, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"sheet.{fmt}"
    if fmt == "zip":  # the deploy files: `plan --deploy DIR`, one YAML per object, in one archive
        import zipfile

        manifests = folder / "deploy"
        code, _, err = cli_run([*argv, "--format", "json", "--deploy", str(manifests)])
        files = sorted(manifests.glob("*.yaml")) if manifests.is_dir() else []
        if code not in (0, 2) or not files:
            raise UiError(error_line(err, "no configuration meets the scenario: no deploy files"))
        path = folder / "deploy.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for f in files:
                archive.write(f, arcname=f"k8s/{f.name}")
        return path
    if fmt == "json":
        code, out, err = cli_run([*argv, "--format", "json"])
        if code not in (0, 2):
            raise UiError(error_line(err, "plan failed"))
        path.write_text(out)
        return path
    code, _, err = cli_run([*argv, "--format", fmt, "--out", str(path)])
    if code not in (0, 2) or not path.exists():
        raise UiError(error_line(err, "plan failed"))
    return path


def _devices() -> list[tuple[str, str]]:
    from sizeup.hardware.catalog import load_catalog

    return sorted((d.id, d.name) for d in load_catalog().devices.values())


def _presets() -> list[str]:
    from sizeup.ingest.load import list_presets

    return list_presets()


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
