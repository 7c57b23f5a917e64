"""Train: training or fine-tuning one model on a device, one method with its memory and step-time breakdown, or
full, LoRA and QLoRA side by side. A run that does not fit shows what would (each change one click away)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from sizeup.ui.charts import train_charts
from sizeup.ui.forms import TRAIN_DEFAULTS, TRAIN_FLAGS, changes_of, train_argv, with_change
from sizeup.ui.site import Site, attempt

METHODS = ("full", "lora", "qlora", "dora", "freeze")
SIDE_BY_SIDE = "compare"
"""The method choice that prices full, LoRA and QLoRA side by side."""


def routes(site: Site) -> list[Route]:
    async def page(request: Request):
        q = site.query(request, TRAIN_DEFAULTS)
        fields = dict(q)
        if fields.get("method") == SIDE_BY_SIDE:
            fields.pop("method")
            fields["compare"] = "full,lora,qlora"
        data, error = await attempt(site.call("quick", "train", train_argv(fields.get("model", ""), fields)))
        kept = {k: v for k, v in q.items() if k in ("model", *TRAIN_FLAGS)}
        alternatives = []
        for alt in (data or {}).get("would_fit", []):
            change = changes_of(alt["change"], TRAIN_FLAGS)
            alternatives.append({**alt, "set": change, "href": with_change("/train", kept, change) if change else None})
        ctx = dict(q=q, data=data, error=error, alternatives=alternatives, charts=train_charts(data),
                   methods=METHODS)
        if site.partial(request):
            return site.page(request, "_train_result.html", **ctx)
        return site.page(request, "train.html", **ctx, **await site.menus())

    async def api(request: Request):
        q = site.query(request)
        return JSONResponse(await site.call("quick", "train", train_argv(q.get("model", ""), q)))

    return [Route("/train", page), Route("/api/train", api)]
