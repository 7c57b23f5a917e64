"""Compare devices: one model across the catalog, filtered, sorted by any column and paged; the chart puts
speed against cost with the cheapest per million tokens ringed (and says so in its legend)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from sizeup.ui.bridge import UiError
from sizeup.ui.charts import compare_chart
from sizeup.ui.forms import DEFAULTS, number_arg, with_change
from sizeup.ui.site import Site, attempt

PAGE_ROWS = 25
COLUMNS = {"name": "device", "vendor": "vendor", "device_memory_bytes": "memory", "format": "format",
           "tokens_per_s": "decode tokens/s", "usd_per_gpu_hour": "$ per GPU-hour",
           "usd_per_million_tokens": "$ per million tokens"}
"""Sortable columns: key -> header."""
COLUMN_CLASS = {"vendor": "opt", "device_memory_bytes": "n opt", "format": "opt", "tokens_per_s": "n",
                "usd_per_gpu_hour": "n opt", "usd_per_million_tokens": "n"}
"""Numbers right-aligned ("n"); columns a phone leaves out ("opt")."""
DESCENDING_FIRST = {"tokens_per_s", "device_memory_bytes"}
"""Columns whose first click sorts the largest first."""
KINDS = ("gpu", "npu", "tpu", "soc", "cpu")


def routes(site: Site) -> list[Route]:
    async def data_of(q: dict) -> dict:
        model = q.get("model", DEFAULTS["model"]).strip()
        if not model:
            raise UiError("model: expected a preset name (e.g. llama-3.1-8b)")
        price = q.get("max_usd_per_hour") or None
        options = dict(model=model, quant=q.get("quant") or None, engine=q.get("engine") or None,
                       batch=number_arg(q, "batch", 1), prompt=number_arg(q, "prompt", 512),
                       output=number_arg(q, "output", 128, minimum=0), vendor=q.get("vendor", ""),
                       kind=q.get("kind", ""),
                       min_memory_gib=number_arg(q, "min_memory_gib", 0, minimum=0, integer=False),
                       max_usd_per_hour=None if price is None else number_arg(q, "max_usd_per_hour", 0, minimum=0,
                                                                              integer=False))
        return await site.call("quick", "compare", options)

    async def page(request: Request):
        q = site.query(request, {"model": DEFAULTS["model"], "kind": "gpu"})
        data, error = await attempt(data_of(q))
        sort = q.get("sort") if q.get("sort") in COLUMNS else "tokens_per_s"
        descending = q.get("dir", "desc" if sort in DESCENDING_FIRST else "asc") == "desc"
        rows = (data or {}).get("devices", [])
        if q.get("fits") == "1":
            rows = [r for r in rows if r.get("fits")]
        known = sorted((r for r in rows if r.get(sort) is not None), key=lambda r: _key(r[sort]), reverse=descending)
        ordered = known + [r for r in rows if r.get(sort) is None]  # rows without the figure last, either way
        pages = max((len(ordered) + PAGE_ROWS - 1) // PAGE_ROWS, 1)
        number = min(max(number_arg(q, "page", 1), 1), pages)
        shown = ordered[(number - 1) * PAGE_ROWS: number * PAGE_ROWS]
        base = {k: v for k, v in q.items() if k not in ("page", "sort", "dir") and v}
        heads = [{"key": k, "text": text, "on": k == sort, "descending": descending, "cls": COLUMN_CLASS.get(k, ""),
                  "href": with_change("/compare", base, {"sort": k, "dir": _next_dir(k, sort, descending)})}
                 for k, text in COLUMNS.items()]
        links = {"previous": with_change("/compare", base | {"sort": sort, "dir": "desc" if descending else "asc"},
                                         {"page": number - 1}) if number > 1 else None,
                 "next": with_change("/compare", base | {"sort": sort, "dir": "desc" if descending else "asc"},
                                     {"page": number + 1}) if number < pages else None}
        ctx = dict(q=q, data=data, error=error, rows=shown, heads=heads, page=number, pages=pages, total=len(ordered),
                   first=(number - 1) * PAGE_ROWS + 1, links=links, kinds=KINDS,
                   chart=compare_chart(data, [r["device"] for r in shown]))
        if site.partial(request):
            return site.page(request, "_compare_result.html", **ctx)
        return site.page(request, "compare.html", **ctx, **await site.menus())

    async def api(request: Request):
        return JSONResponse(await data_of(site.query(request)))

    return [Route("/compare", page), Route("/api/compare", api)]


def _key(value):
    return value.lower() if isinstance(value, str) else value


def _next_dir(key: str, sort: str, descending: bool) -> str:
    if key == sort:
        return "asc" if descending else "desc"
    return "desc" if key in DESCENDING_FIRST else "asc"
