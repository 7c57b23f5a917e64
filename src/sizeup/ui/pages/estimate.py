"""Estimate: one model on one device. A configuration that does not fit is a result: the verdict, the memory
against what is usable, and the CLI's "what would fit" list, each change one click away."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from sizeup.ui.charts import estimate_memory_chart
from sizeup.ui.forms import DEFAULTS, ESTIMATE_FLAGS, estimate_argv, fields_of, with_change
from sizeup.ui.site import MODEL_SUFFIXES, Site, attempt

FORM_FIELDS = ("model", *ESTIMATE_FLAGS)


def routes(site: Site) -> list[Route]:
    async def view(params: dict, model: str, shown: str | None = None) -> dict:
        argv = estimate_argv(model, params)
        data, error = await attempt(site.call("quick", "estimate_view", argv, params.get("device", ""),
                                              params.get("engine", ""), params.get("quant", "")))
        data = data or {}
        result = data.get("result")
        if result is not None and shown:  # an upload: named by the file the user chose
            result["model"]["name"] = shown
        alternatives = []
        for alt in (result or {}).get("would_fit", []):
            change = {alt["flag"]: str(alt["value"])}
            alternatives.append({**alt, "set": change,
                                 "href": None if shown else with_change("/estimate", _kept(params), change)})
        return {"params": params, "result": result, "error": error or data.get("error"),
                "choices": data.get("choices") or {}, "alternatives": alternatives, "upload": shown,
                "memory_chart": estimate_memory_chart(result),
                "compare_href": None if shown else with_change("/compare", {"model": params.get("model", "")}, {}),
                "fit_href": with_change("/", {"device": result["device"]["id"]}, {}) if result else None}

    async def page(request: Request):
        params = site.query(request, DEFAULTS)
        ctx = await view(params, params.get("model", ""))
        if site.partial(request):
            return site.page(request, "_estimate_result.html", **ctx, oob=True)
        return site.page(request, "estimate.html", **ctx, **await site.menus())

    async def result(request: Request):
        if request.method == "GET":
            params = site.query(request, DEFAULTS)
            return site.page(request, "_estimate_result.html", **await view(params, params.get("model", "")), oob=True)
        form = await site.form(request)
        params = DEFAULTS | fields_of(form.multi_items())
        stored = await site.upload(form, MODEL_SUFFIXES)
        if stored:
            return site.page(request, "_estimate_result.html", **await view(params, stored[0], stored[1]), oob=True)
        return site.page(request, "_estimate_result.html", **await view(params, params.get("model", "")), oob=True)

    async def api(request: Request):  # the CLI's own defaults: same inputs, same JSON
        params = site.query(request)
        return JSONResponse(await site.call("quick", "estimate", estimate_argv(params.get("model", ""), params)))

    return [Route("/estimate", page), Route("/estimate/result", result, methods=["GET", "POST"]),
            Route("/api/estimate", api)]


def _kept(params: dict) -> dict:
    return {k: v for k, v in params.items() if k in FORM_FIELDS}
