"""Runs: the measurements in the run store, readable (units, rounding, headers in words), and each run beside
its prediction with a predicted-vs-measured chart. /api/runs… are `sizeup runs list|show --json` and
`sizeup compare RUN_ID --json`."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from sizeup.ui.bridge import UiError
from sizeup.ui.charts import run_chart
from sizeup.ui.site import Site, attempt

MAX_RUN_ID = 2**63 - 1
"""SQLite's largest row id: a longer number names no run."""


def _run_id(request: Request) -> int:
    run_id = request.path_params["run_id"]
    if run_id > MAX_RUN_ID:
        raise UiError(f"run {str(run_id)[:30]}: no such run (ids are at most {MAX_RUN_ID})", 404)
    return run_id


def routes(site: Site) -> list[Route]:
    async def runs_page(request: Request):
        data, error = await attempt(site.call("quick", "runs"))
        return site.page(request, "runs.html", data=data, error=error)

    async def run_page(request: Request):
        run_id = _run_id(request)
        view, error = await attempt(site.call("quick", "run_view", run_id))
        view = view or {}
        record, terms = view.get("record"), view.get("terms")
        return site.page(request, "run.html", run_id=run_id, record=record, error=error, terms=terms,
                         config=config_rows((record or {}).get("config") or {}),
                         terms_error=view.get("terms_error"), chart=run_chart(record, terms),
                         serving=bool(terms and terms.get("points") and "concurrency" in terms["points"][0]))

    async def api_runs(request: Request):
        return JSONResponse(await site.call("quick", "runs"))

    async def api_run(request: Request):
        return JSONResponse(await site.call("quick", "run", _run_id(request)))

    async def api_compare(request: Request):
        return JSONResponse(await site.call("quick", "compare_run", _run_id(request)))

    return [Route("/runs", runs_page), Route("/runs/{run_id:int}", run_page), Route("/api/runs", api_runs),
            Route("/api/runs/{run_id:int}", api_run), Route("/api/runs/{run_id:int}/compare", api_compare)]


def config_rows(config: dict) -> list[tuple[str, str]]:
    """A run's stored configuration as (name, text) rows a reader takes in: shapes as 1×3×32×32, durations with
    their unit, lists joined, nothing printed as a Python value."""
    from sizeup.ui.filters import FILTERS

    rows = []
    for key, value in sorted(config.items()):
        if key == "inputs" and isinstance(value, list):
            text = "; ".join(_input_text(v) for v in value) or FILTERS["text"](None)
        elif key.endswith("_s") and isinstance(value, (int, float)) and not isinstance(value, bool):
            text = FILTERS["secs"](value)
        else:
            text = FILTERS["text"](value)
        rows.append((FILTERS["label"](key), text))
    return rows


def _input_text(spec) -> str:
    if not isinstance(spec, dict):
        return str(spec)
    shape = "×".join(str(d) for d in spec.get("shape") or []) or "scalar"
    extra = ", ".join(str(v) for v in (spec.get("name"), spec.get("dtype")) if v)
    return f"{shape} ({extra})" if extra else shape
