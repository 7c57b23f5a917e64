"""A UI worker process: `python -m sizeup.ui.worker --root DIR [--nice N]`, started by ui/pool.py.

Once warm it sends READY, then reads one job per frame on stdin (a name of `ui/jobs.py`'s table and its
arguments) and answers one frame on a private copy of stdout (a 4-byte length, then JSON: no pickle either way),
one job at a time. Everything it computes runs under the source
policy of `sizeup.sources`: models are presets, catalog names or files under DIR/uploads; no path
outside, no user code. Its caches (catalog, traces) live in DIR/cache, so the UI writes nowhere else.
A job it cannot finish in time is ended by the pool killing the process; it exits by itself when its
stdin closes (the server went away).
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["READY", "read_frame", "run_job", "write_frame", "main"]

_HEADER = struct.Struct("!I")
READY = {"ready": True}
"""The first frame a worker sends, once warm and under its policy: start-up is not charged to a request."""
MAX_FRAME_BYTES = 256 * 1024 * 1024
"""Largest frame either side reads: far above any sheet, below a runaway."""


def read_frame(stream: BinaryIO) -> Any:
    """The next frame's JSON value; None at the end of the stream."""
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(head)
    if size > MAX_FRAME_BYTES:
        raise ValueError(f"frame of {size:,} bytes")
    body = stream.read(size)
    if len(body) < size:
        return None
    return json.loads(body)


def write_frame(stream: BinaryIO, value: Any) -> None:
    body = json.dumps(value, separators=(",", ":")).encode()
    stream.write(_HEADER.pack(len(body)) + body)
    stream.flush()


def _jobs() -> dict:
    from sizeup.ui.jobs import JOBS

    return JOBS


def run_job(root: Path, frame: Any) -> dict:
    """{"ok": true, "value": …} or {"ok": false, "status": 400 | 500, "message": one line}."""
    from sizeup.errors import describe_error
    from sizeup.ui.bridge import UiError, scrub_paths

    try:
        jobs = _jobs()
        if not (isinstance(frame, dict) and frame.get("job") in jobs and isinstance(frame.get("args"), list)):
            raise UiError("malformed job", 500)
        return {"ok": True, "value": jobs[frame["job"]](root, *frame["args"])}
    except UiError as e:
        return {"ok": False, "status": e.status, "message": e.message}
    except Exception as e:  # noqa: BLE001 — the boundary: a SizeupError is bad input, anything else a bug
        report = describe_error(e, context="sizeup ui")
        return {"ok": False, "status": report.http_status, "message": scrub_paths(report.message)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sizeup.ui.worker")
    ap.add_argument("--root", required=True, help="the UI's folder (uploads, downloads, cache)")
    ap.add_argument("--nice", type=int, default=0, help="lower this worker's CPU priority by N")
    args = ap.parse_args(argv)
    root = Path(args.root).resolve()
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")  # frames only: stray prints go to /dev/null
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    cache = root / "cache"  # sizeup's caches, and any library's (transformers, torch, matplotlib), stay here
    os.environ.update(SIZEUP_CACHE_DIR=str(cache), XDG_CACHE_HOME=str(cache), HF_HOME=str(cache / "huggingface"),
                      MPLCONFIGDIR=str(cache / "matplotlib"), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    if args.nice and hasattr(os, "nice"):
        os.nice(args.nice)
    from sizeup.sources import SourcePolicy, restricted

    _warm()
    with restricted(SourcePolicy(roots=((root / "uploads").resolve(),))):
        write_frame(replies, READY)
        while True:
            frame = read_frame(sys.stdin.buffer)
            if frame is None:
                return 0
            write_frame(replies, run_job(root, frame))


def _warm() -> None:
    """Import the API's verbs and the flag parsers, and read the catalog once, so the first request pays for none."""
    try:
        import sizeup.api.inference  # noqa: F401
        import sizeup.cli.commands.estimate  # noqa: F401
        import sizeup.ui.jobs  # noqa: F401
        from sizeup.hardware.catalog import load_catalog

        load_catalog()
    except Exception:  # noqa: BLE001 — a broken catalog is reported by the request that needs it
        pass


if __name__ == "__main__":
    raise SystemExit(main())
