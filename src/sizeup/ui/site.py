"""What every page of the UI shares: the worker pool, the templates, the uploads folder, the menus, and the
helpers that read a request within its caps.

The server process computes nothing: a page calls `site.call(lane, job, …)`, a job of ui/jobs.py run in a
worker process (ui/pool.py) that answers JSON data; the page renders it. Uploads are stored under
`<ui folder>/uploads/<sha256 prefix>/` with the name the browser gave (made safe), so a result names the file
the user chose, and the path itself never goes back to the browser.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.templating import Jinja2Templates

from sizeup.ui.bridge import MAX_UPLOAD_BYTES, UiError
from sizeup.ui.filters import install_filters
from sizeup.sources import PREFIX_SUFFIX
from sizeup.ui.forms import fields_of, head_of
from sizeup.ui.pool import WorkerPool

__all__ = ["Site", "attempt", "MODEL_SUFFIXES"]

HERE = Path(__file__).parent
MODEL_SUFFIXES = (".json", ".safetensors", ".gguf")
SCENARIO_SUFFIXES = (".yaml", ".yml")
MAX_FORM_FIELDS = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


class Site:
    def __init__(self, work: Path, pool: WorkerPool) -> None:
        self.work = work
        self.pool = pool
        self.templates = Jinja2Templates(directory=str(HERE / "templates"))
        install_filters(self.templates.env)
        self._menus: dict[str, Any] = {}
        self.sheets: dict[str, list[str]] = {}
        """Download key -> the plan's argv (the oldest forgotten first past MAX_SHEETS)."""

    # ---- computing --------------------------------------------------------------------------------------
    async def call(self, lane: str, job: str, *args: Any, limit_s: float | None = None) -> Any:
        return await self.pool.call(lane, job, *args, limit_s=limit_s)

    async def menus(self) -> dict[str, Any]:
        """Presets, devices, vendors, frameworks the forms offer: read once, by a worker (the server process never
        loads the catalog, so it reads and writes no cache outside the UI's folder)."""
        if not self._menus:
            self._menus.update(await self.call("quick", "menus"))
        return self._menus

    # ---- pages ------------------------------------------------------------------------------------------
    def page(self, request: Request, name: str, **ctx: Any) -> HTMLResponse:
        nav = request.url.path.strip("/").split("/")[0] or "start"
        return self.templates.TemplateResponse(request, name, ctx | {"csrf_token": request.state.csrf_token,
                                                                     "nav": nav})

    @staticmethod
    def partial(request: Request) -> bool:
        """Whether htmx asked for the result alone (the form stays as it is)."""
        return "HX-Request" in request.headers and "HX-Boosted" not in request.headers

    # ---- reading a request within its caps --------------------------------------------------------------
    @staticmethod
    def query(request: Request, defaults: dict[str, str] | None = None) -> dict[str, str]:
        return (defaults or {}) | fields_of(request.query_params.multi_items())

    @staticmethod
    async def body(request: Request, limit: int = MAX_UPLOAD_BYTES + 65536) -> bytes:
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > limit:
            raise UiError(f"request of {int(length):,} bytes: larger than the {limit // 2**20} MiB the UI reads here "
                          "(a config.json, the header of a .safetensors / .gguf file, or an ONNX graph)", 413)
        data = bytearray()
        async for chunk in request.stream():
            data += chunk
            if len(data) > limit:
                raise UiError(f"request: larger than the {limit // 2**20} MiB the UI reads here", 413)
        request._body = bytes(data)  # Starlette's form parser reads the cached body
        return request._body

    async def form(self, request: Request, limit: int = MAX_UPLOAD_BYTES):
        await self.body(request, limit + 65536)
        return await request.form(max_files=2, max_fields=MAX_FORM_FIELDS, max_part_size=limit)

    def store(self, data: bytes, filename: str, suffixes: tuple[str, ...],
              limit: int = MAX_UPLOAD_BYTES, whole: str = "") -> tuple[str, str]:
        """(path, shown name) of `data` saved under the UI's uploads folder; the path goes to a worker, never to
        the browser. A config.json keeps its name as a folder holding it (a model is named after its folder).
        `whole` (the form's file_bytes) is the size of the file a .gguf upload is the head of (ui.js sends the
        first MAX_UPLOAD_BYTES of a larger one): recorded beside it, so its reader checks all the head holds and
        does not take the missing tensor data for a truncated file."""
        suffix = Path(filename).suffix.lower()
        if suffix not in suffixes:
            raise UiError(f"upload {filename[:80]!r}: expected {', '.join(suffixes)}")
        if len(data) > limit:
            raise UiError(f"upload {filename[:80]!r}: {len(data):,} bytes, more than {limit:,}", 413)
        shown = (_UNSAFE.sub("_", Path(filename).name).strip("._") or "upload")[:96]
        if not shown.lower().endswith(suffix):
            shown += suffix
        prefix_of = head_of(filename, suffix, len(data), whole)
        key = hashlib.sha256(data + (b"" if prefix_of is None else b"/prefix-of/%d" % prefix_of)).hexdigest()[:16]
        folder = self.work / "uploads" / key
        if suffix == ".json":
            folder, name = folder / shown, "config.json"
        else:
            name = shown
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        path.write_bytes(data)
        if prefix_of is not None:
            Path(str(path) + PREFIX_SUFFIX).write_text(str(prefix_of), encoding="ascii")
        return str(path), shown

    async def upload(self, form, suffixes: tuple[str, ...], limit: int = MAX_UPLOAD_BYTES) -> tuple[str, str] | None:
        """The uploaded `file` field stored (path, shown name), or None when none was sent."""
        upload = form.get("file")
        if upload is None or isinstance(upload, str) or not upload.filename:
            return None
        whole = form.get("file_bytes")
        return self.store(await upload.read(), upload.filename, suffixes, limit,
                          whole if isinstance(whole, str) else "")


async def attempt(awaitable: Awaitable) -> tuple[Any, str | None]:
    """(value, None) or (None, the one-line message): a page shows a refused input next to the form."""
    try:
        return await awaitable, None
    except UiError as e:
        return None, e.message
