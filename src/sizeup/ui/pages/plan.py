"""Plan: the cheapest setup for a scenario (quick fields, an uploaded or pasted scenario YAML), its sheet in the
page and as files (HTML, Markdown, JSON, XLSX, the Kubernetes manifests)."""

from __future__ import annotations

import hashlib
import json

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse
from starlette.routing import Route

from sizeup.ui.bridge import UiError
from sizeup.ui.downloads import DOWNLOADS
from sizeup.ui.forms import fields_of, plan_fields, plan_file_argv, plan_quick_argv
from sizeup.ui.site import SCENARIO_SUFFIXES, Site, attempt

MAX_SHEETS = 256
"""Plans whose downloads the UI remembers (the oldest is forgotten first)."""
TASKS = ("chat", "api", "batch", "finetune", "pretrain", "edge")


def routes(site: Site) -> list[Route]:
    def scenario(text: str) -> list[str]:
        return plan_file_argv(site.store(text.encode(), "scenario.yaml", SCENARIO_SUFFIXES)[0])

    async def form_argv(request: Request) -> list[str]:
        form = await site.form(request)
        stored = await site.upload(form, SCENARIO_SUFFIXES)
        if stored:
            return plan_file_argv(stored[0])
        fields = fields_of(form.multi_items())
        if fields.get("yaml", "").strip():
            return scenario(fields["yaml"])
        return plan_quick_argv(fields.get("model", ""), fields)

    async def json_argv(request: Request) -> list[str]:
        """POST /api/plan, application/json: {"scenario": YAML text or mapping}, or the quick fields."""
        try:
            data = json.loads(await site.body(request, 1024 * 1024 + 65536))
        except (ValueError, RecursionError):
            raise UiError("body: not valid JSON (expected {\"scenario\": …} or the quick plan's fields)") from None
        if not isinstance(data, dict):
            raise UiError("body: expected a JSON object: {\"scenario\": YAML text or mapping} or the quick fields")
        text = data.get("scenario")
        if isinstance(text, (str, dict)):
            text = text if isinstance(text, str) else json.dumps(text)  # JSON is YAML
            fields_of({"scenario": text})
            return scenario(text)
        if text is not None:
            raise UiError("scenario: expected YAML text or a mapping")
        fields = fields_of((k, v if isinstance(v, str) else json.dumps(v)) for k, v in data.items())
        return plan_quick_argv(fields.get("model", ""), fields)

    async def page(request: Request):
        return site.page(request, "plan.html", tasks=TASKS, reads=plan_fields(), **await site.menus())

    async def result(request: Request):
        argv = await form_argv(request)
        view, error = await attempt(site.call("long", "plan_view", argv))
        key = hashlib.sha256("\0".join(argv).encode()).hexdigest()[:16]
        site.sheets[key] = argv
        while len(site.sheets) > MAX_SHEETS:
            site.sheets.pop(next(iter(site.sheets)))
        return site.page(request, "_plan_result.html", data=(view or {}).get("data"), error=error, key=key,
                         sheet_html=(view or {}).get("html", ""), formats=list(DOWNLOADS))

    async def download(request: Request):
        key, fmt = request.path_params["key"], request.path_params["fmt"]
        if key not in site.sheets or fmt not in DOWNLOADS:
            raise UiError(f"download {key[:20]}.{fmt[:10]}: unknown sheet or format (expected one of "
                          f"{', '.join(DOWNLOADS)})", 404)
        path = await site.call("long", "plan_file", site.sheets[key], fmt, key)
        return FileResponse(path, media_type=DOWNLOADS[fmt], filename=f"sizeup-plan.{fmt}")

    async def api(request: Request):
        return JSONResponse(await site.call("long", "plan", await json_argv(request)))

    return [Route("/plan", page), Route("/plan/result", result, methods=["POST"]),
            Route("/plan/download/{key}.{fmt}", download), Route("/api/plan", api, methods=["POST"])]
