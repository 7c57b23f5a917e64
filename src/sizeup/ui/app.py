"""The Starlette app: one module of routes per page (ui/pages/), Jinja2 + htmx partials, and the JSON API under
/api/.

Every request first passes `guard.Guard` (Host, Origin, CSRF token, content type, sizes); every page or API
answer that computes runs a job of ui/jobs.py in the worker pool (`pool.py`: separate processes under
`sizeup.sources`' policy, with a time limit), which calls `sizeup.api` directly, so /api/… returns what
`sizeup … --json` prints for the same inputs. Bad input is a 4xx with the one-line message; any other
exception is a 500 with one line, and the server keeps serving.
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from sizeup.ui.bridge import UiError, scrub_paths
from sizeup.ui.guard import Guard
from sizeup.ui.pool import DEFAULT_TIME_LIMIT_S, Lane, WorkerPool
from sizeup.ui.site import HERE, Site

__all__ = ["create_app"]


def create_app(workdir: str | Path | None = None, *, hosts: tuple[str, ...] = (),
               time_limit_s: float = DEFAULT_TIME_LIMIT_S, lanes: dict[str, Lane] | None = None) -> Guard:
    """The app; uploads, downloads and caches live only under `workdir` (default: a fresh temp dir).
    `hosts`: Host names accepted besides 127.0.0.1, localhost and [::1] (the bound host, --allowed-host)."""
    from sizeup.ui.pages import compare, estimate, flops, plan, runs, start, train

    work = Path(workdir or tempfile.mkdtemp(prefix="sizeup-ui-")).resolve()
    (work / "uploads").mkdir(parents=True, exist_ok=True)
    pool = WorkerPool(work, lanes=lanes, time_limit_s=time_limit_s)
    site = Site(work, pool)

    async def session(request: Request):
        """The CSRF token of this session (the cookie comes with the answer): for API clients."""
        return JSONResponse({"csrf_token": request.state.csrf_token, "header": "X-CSRF-Token"})

    async def favicon(request: Request):
        return FileResponse(HERE / "static" / "favicon.svg", media_type="image/svg+xml")

    async def ui_error(request: Request, exc: UiError):
        return _error_response(request, exc.message, exc.status)

    async def server_error(request: Request, exc: Exception):
        from sizeup.errors import describe_error

        return _error_response(request, scrub_paths(describe_error(exc, context="sizeup ui").message), 500)

    routes = [route for module in (start, estimate, compare, train, plan, flops, runs) for route in module.routes(site)]
    routes += [Route("/api/session", session), Route("/favicon.ico", favicon),
               Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")]

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
