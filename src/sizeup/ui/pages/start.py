"""The start page: "I have a …". A device (and what it is for: chat, code, fine-tuning) -> the models that run on
it, under which engine and format, fastest first (`sizeup.api.fit`, as `sizeup fit DEVICE`); each row opens its
estimate. /api/fit is `sizeup fit DEVICE --json`."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from sizeup.ui.bridge import UiError
from sizeup.ui.forms import fit_argv, number_arg, with_change
from sizeup.ui.site import Site, attempt

PAGE_ROWS = 20
TASKS = ("chat", "code", "finetune")
SUGGESTED = ("rtx-4090", "rtx-4060-ti-16gb", "apple-m3-max", "h100-sxm-80gb", "jetson-orin-nano-8gb")
"""Devices offered as one-click examples on the empty start page (those the catalog holds)."""


def routes(site: Site) -> list[Route]:
    async def page(request: Request):
        q = site.query(request)
        menus = await site.menus()
        data = error = None
        if q.get("device", "").strip():
            task = q.get("task") if q.get("task") in TASKS else "chat"
            data, error = await attempt(site.call("quick", "fit", fit_argv(q["device"], {"task": task})))
        rows = (data or {}).get("models", [])
        pages = max((len(rows) + PAGE_ROWS - 1) // PAGE_ROWS, 1)
        number = min(max(number_arg(q, "page", 1), 1), pages)
        shown = [_row(r, data) for r in rows[(number - 1) * PAGE_ROWS: number * PAGE_ROWS]]
        base = {k: v for k, v in q.items() if k in ("device", "task") and v}
        links = {"previous": with_change("/", base, {"page": number - 1}) if number > 1 else None,
                 "next": with_change("/", base, {"page": number + 1}) if number < pages else None}
        known = {d["id"] for d in menus["devices"]}
        suggested = [d for d in menus["devices"] if d["id"] in SUGGESTED and d["id"] in known]
        ctx = dict(q=q, data=data, error=error, rows=shown, page=number, pages=pages, links=links, tasks=TASKS,
                   first=(number - 1) * PAGE_ROWS + 1, total=len(rows), suggested=suggested)
        if site.partial(request):
            return site.page(request, "_start_result.html", **ctx)
        return site.page(request, "start.html", **ctx, **menus)

    async def api(request: Request):
        q = site.query(request)
        if not q.get("device", "").strip():
            raise UiError("device: expected a catalog device name (e.g. rtx-4060-ti-16gb)")
        return JSONResponse(await site.call("quick", "fit", fit_argv(q["device"], q)))

    return [Route("/", page), Route("/api/fit", api)]


def _row(r: dict, data: dict) -> dict:
    """A fit row with the page that opens it: its estimate (or its fine-tuning) on the device."""
    device = data["device"]["id"]
    if data["task"] == "finetune":
        href = with_change("/train", {"model": r["model"], "device": device, "method": r.get("method") or "lora"}, {})
    else:
        w = data["workload"]
        href = with_change("/estimate", {"model": r["model"], "device": device, "engine": r["engine"],
                                         "quant": r["format"], "batch": w["batch"], "prompt": w["prompt"],
                                         "output": w["output"]}, {})
    return {**r, "href": href}
