"""Latency of the web UI over real HTTP to a uvicorn server on 127.0.0.1, once warm.

Table 1, the estimate: /api/estimate and the htmx partial /estimate/result. Target: p95 under 100 ms.
Table 2, isolation: a static file and an estimate, idle and while 4 long plans run at once (each plan
posted again as soon as it ends, so 4 are always computing). Target: loaded p95 at most 2x the idle p95.
On a shared machine the background load drifts, so the two conditions are interleaved in blocks of a few
requests: "idle" samples are taken while the plan workers are paused (SIGSTOP; Linux/macOS), "loaded"
ones while they run, both under the same background.

    PYTHONPATH=src python benchmarks/ui_latency.py [--requests 200] [--loaded-requests 400] [--plans 4]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))  # the tests' own server-in-a-thread (tests/ui/server.py)

CASES = [
    ("api  llama-3.1-8b rtx-4090 q4_k_m", "/api/estimate?model=llama-3.1-8b&device=rtx-4090&quant=q4_k_m"),
    ("api  qwen2.5-7b h100 fp8 vllm b16", "/api/estimate?model=qwen2.5-7b&device=h100-sxm-80gb&quant=fp8&engine=vllm"
                                          "&batch=16"),
    ("page /estimate/result (htmx)", "/estimate/result?model=llama-3.1-8b&device=rtx-4090&quant=q4_k_m"
                                     "&engine=llama.cpp"),
]
PROBES = [("static /static/style.css", "/static/style.css"), ("api  estimate llama-3.1-8b 4090", CASES[0][1])]
LONG_PLAN = {"model": "llama-3.1-70b", "task": "chat", "users": 20000}
"""A plan of several seconds: 70B chat for 20,000 users over the whole catalog."""


def _timed(client, url: str, n: int) -> list[float]:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        client.get(url).raise_for_status()
        times.append((time.perf_counter() - t) * 1e3)
    return sorted(times)


def _p95(times: list[float]) -> float:
    return times[int(0.95 * (len(times) - 1))]


def _plans_running(base: str, headers: dict, cookies, count: int, stop: threading.Event, done: list[float]):
    import httpx

    def loop() -> None:
        with httpx.Client(base_url=base, timeout=600, headers=headers, cookies=cookies) as own:
            while not stop.is_set():
                t = time.perf_counter()
                own.post("/api/plan", json=LONG_PLAN).raise_for_status()
                done.append(time.perf_counter() - t)

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(count)]
    for t in threads:
        t.start()
    return threads


def _plan_workers() -> list:
    """The long lane's worker processes (they run at a lower priority than the quick lane's)."""
    import psutil

    return [p for p in psutil.Process().children() if "sizeup.ui.worker" in " ".join(p.cmdline()) and p.nice() > 0]


def _interleaved(client, n: int, block: int = 10) -> tuple[dict, dict]:
    """Per probe, `n` latencies with the plan workers paused and `n` with them running, in alternating blocks."""
    import signal

    idle = {label: [] for label, _ in PROBES}
    loaded = {label: [] for label, _ in PROBES}
    workers = _plan_workers()
    assert workers, "no plan is running"
    for _ in range(max(n // block, 1)):
        for paused in (True, False):
            for w in workers:
                w.send_signal(signal.SIGSTOP if paused else signal.SIGCONT)
            time.sleep(0.05)
            for label, url in PROBES:
                (idle if paused else loaded)[label] += _timed(client, url, block)
    for w in workers:
        w.send_signal(signal.SIGCONT)
    return {k: sorted(v) for k, v in idle.items()}, {k: sorted(v) for k, v in loaded.items()}


def main() -> None:
    import httpx

    from sizeup.ui.app import create_app
    from tests.ui.server import serve

    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--loaded-requests", type=int, default=400)
    ap.add_argument("--plans", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=10)
    args = ap.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="sizeup-ui-bench-") as work, \
            serve(create_app(work, time_limit_s=600)) as base, httpx.Client(base_url=base, timeout=600) as client:
        client.headers.update({"origin": base, "x-csrf-token": client.get("/api/session").json()["csrf_token"]})
        print(f"{'request':38} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}  p95<100ms")
        for label, url in CASES:
            _timed(client, url, args.warmup)
            times = _timed(client, url, args.requests)
            ok &= _p95(times) < 100
            print(f"{label:38} {len(times):5d} {statistics.median(times):8.1f} {_p95(times):8.1f} {times[-1]:8.1f}  "
                  f"{'yes' if _p95(times) < 100 else 'NO'}")
        stop, durations = threading.Event(), []
        threads = _plans_running(base, dict(client.headers), client.cookies, args.plans, stop, durations)
        time.sleep(3.0)  # all plans computing
        idle, loaded = _interleaved(client, args.loaded_requests)
        stop.set()
        for t in threads:
            t.join(600)
        print(f"\nwhile {args.plans} long plans run at once ({len(durations)} plans done, each "
              f"{statistics.median(durations):.1f} s median; alone: see plan_speed.py)")
        print(f"{'request':38} {'idle p50':>9} {'idle p95':>9} {'load p50':>9} {'load p95':>9} {'ratio':>6}  <=2x")
        for label, _ in PROBES:
            a, b = idle[label], loaded[label]
            ratio = _p95(b) / _p95(a)
            ok &= ratio <= 2
            print(f"{label:38} {statistics.median(a):9.1f} {_p95(a):9.1f} {statistics.median(b):9.1f} "
                  f"{_p95(b):9.1f} {ratio:6.2f}  {'yes' if ratio <= 2 else 'NO'}")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
