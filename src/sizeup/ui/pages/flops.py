"""FLOPs and roofline: an uploaded ONNX graph or one of sizeup's zoo models (traced on fake tensors) counted op by
op, then priced on a device: where each op sits under the roofline, what bounds it, and the time by kind.
/api/flops is `sizeup flops sizeup.examples.zoo:NAME --input SHAPE --json` (zoo models; a graph is uploaded)."""

from __future__ import annotations

import re

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from sizeup.ui.bridge import MAX_ONNX_BYTES, UiError
from sizeup.ui.charts import roofline_chart
from sizeup.ui.forms import fields_of, flops_argv
from sizeup.ui.site import Site, attempt

ZOO = "sizeup.examples.zoo:"
DEFAULTS = {"zoo": "resnet50", "device": "rtx-4090"}
_DIM_HINT = re.compile(r"(unbound symbolic dimension .*?): pass its size \(--dim (\S+) on the command line.*\)$")


def routes(site: Site) -> list[Route]:
    async def zoo_target(fields: dict) -> tuple[str, dict]:
        zoo = (await site.menus())["zoo"]
        name = fields.get("zoo", "").strip()
        if name not in zoo:
            raise UiError(f"zoo model {name[:60]!r}: expected one of {', '.join(zoo)}")
        return ZOO + name, {"input": fields.get("input", "").strip() or zoo[name]}

    async def view(fields: dict, target: str, shapes: dict, shown: str | None) -> dict:
        data, error = await attempt(site.call("long", "flops_view", flops_argv(target, shapes),
                                              fields.get("device") or DEFAULTS["device"]))
        if error:  # the library's hint names a CLI flag and a Python argument; here it is a field of the form
            error = _DIM_HINT.sub(r"\1: enter its size under “Its sizes” (e.g. \2)", error)
        if data and shown:
            data["report"]["model"] = shown
        kinds = sorted(((k, v) for k, v in ((data or {}).get("report", {}).get("by_kind") or {}).items()),
                       key=lambda kv: -kv[1].get("flops", 0))
        return dict(fields=fields, view=data, error=error, kinds=kinds, chart=roofline_chart(data), upload=shown)

    async def page(request: Request):
        asked = site.query(request)
        q = DEFAULTS | asked
        ctx: dict = dict(fields=q, view=None, error=None, kinds=[], chart="", upload=None)
        if asked.get("zoo"):  # a link to a count: computed; the bare page waits for the form
            target, shapes = await zoo_target(q)
            ctx = await view(q, target, shapes, None)
        if site.partial(request):
            return site.page(request, "_flops_result.html", **ctx)
        return site.page(request, "flops.html", **ctx, **await site.menus())

    async def result(request: Request):
        form = await site.form(request, MAX_ONNX_BYTES)
        fields = DEFAULTS | fields_of(form.multi_items())
        stored = await site.upload(form, (".onnx",), MAX_ONNX_BYTES)
        if stored:
            ctx = await view(fields, stored[0], {"dims": fields.get("dims", "")}, stored[1])
        else:
            target, shapes = await zoo_target(fields)
            ctx = await view(fields, target, shapes, None)
        return site.page(request, "_flops_result.html", **ctx)

    async def api(request: Request):
        q = site.query(request)
        target, shapes = await zoo_target(q)
        return JSONResponse(await site.call("long", "flops", flops_argv(target, shapes)))

    return [Route("/flops", page), Route("/flops/result", result, methods=["POST"]), Route("/api/flops", api)]
