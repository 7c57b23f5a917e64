"""Latency of the web UI's estimate: /api/estimate and the htmx partial /estimate/result, over real HTTP
to a uvicorn server on 127.0.0.1, once warm. Target: p95 under 100 ms.

    PYTHONPATH=src python benchmarks/ui_latency.py [--requests 200]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import threading
import time

CASES = [
    ("api  llama-3.1-8b rtx-4090 q4_k_m", "/api/estimate?model=llama-3.1-8b&device=rtx-4090&quant=q4_k_m"),
    ("api  qwen2.5-7b h100 fp8 vllm b16", "/api/estimate?model=qwen2.5-7b&device=h100-sxm-80gb&quant=fp8&engine=vllm"
                                          "&batch=16"),
    ("page /estimate/result (htmx)", "/estimate/result?model=llama-3.1-8b&device=rtx-4090&quant=q4_k_m"
                                     "&engine=llama.cpp"),
]


def main() -> None:
    import httpx
    import uvicorn

    from sizeup.ui.app import create_app

    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=10)
    args = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="error"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    print(f"{'request':38} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}  p95<100ms")
    worst = 0.0
    with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
        for label, url in CASES:
            for _ in range(args.warmup):
                client.get(url).raise_for_status()
            times = []
            for _ in range(args.requests):
                t = time.perf_counter()
                client.get(url).raise_for_status()
                times.append((time.perf_counter() - t) * 1e3)
            times.sort()
            p95 = times[int(0.95 * (len(times) - 1))]
            worst = max(worst, p95)
            print(f"{label:38} {len(times):5d} {statistics.median(times):8.1f} {p95:8.1f} {times[-1]:8.1f}  "
                  f"{'yes' if p95 < 100 else 'NO'}")
    server.should_exit = True
    raise SystemExit(0 if worst < 100 else 1)


if __name__ == "__main__":
    main()
