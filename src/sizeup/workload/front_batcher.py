"""A front end that gathers arriving requests before it sends them on: it opens a window at the first arrival
after a release and sends what it holds when the window has lasted `window_s` seconds or holds `max_requests`
requests, whichever comes first (a load harness's batcher, e.g. AMD's MLPerf v4.1 vLLM server harness,
`--enable-batcher`: up to 0.3 s or 96 requests, stated in tests/validation/rows_server_throughput.yaml). Every
request waits there before the server sees it; the wait adds to its TTFT and end-to-end latency.

Poisson arrivals at `rate` (the whole load's: the batcher stands in front of every replica). A window opened by an
arrival at 0 closes at min(window_s, the (max_requests - 1)-th later arrival). On a timeout the opener waits
window_s and the others, uniform over the window (given their number, Poisson arrivals are uniform in time),
window_s / 2 each: mean (window_s + m window_s / 2) / (1 + m) with m = rate x window_s later arrivals. When the
count binds first (rate x window_s >= max_requests - 1) the window holds N = max_requests arrivals spaced by
exponential gaps of mean 1 / rate: the i-th waits (N - i) gaps, mean (N - 1) / (2 rate)."""

from __future__ import annotations

from dataclasses import replace

__all__ = ["hold_wait", "held"]


def hold_wait(rate: float, window_s: float, max_requests: int | None = None) -> float:
    """Mean seconds a request waits in the batcher before it is sent (see the module's docstring)."""
    if rate <= 0 or window_s <= 0:
        return 0.0
    later = rate * window_s
    if max_requests is not None and later >= max_requests - 1:
        return (max_requests - 1) / (2 * rate)
    return (window_s + later * window_s / 2) / (1 + later)


def held(estimate, load):
    """`estimate` (a ServingEstimate) with the batcher's mean wait added to its TTFT and end-to-end latency."""
    wait = hold_wait(load.rate, load.batcher_s, load.batcher_max)
    most = f" or {load.batcher_max:,} requests" if load.batcher_max else ""
    note = (f"front-end batcher (--batcher-window): arrivals held up to {load.batcher_s:g} s{most} before they are "
            f"sent on; at {load.rate:g} requests/s a request waits {wait * 1e3:,.0f} ms there on average (a window "
            f"opened by one arrival, the others uniform in it; workload/front_batcher.py), added to TTFT and "
            f"end-to-end latency; the burst it releases is not priced (arrivals taken as Poisson at the server)")
    return replace(estimate, ttft_s=estimate.ttft_s + wait, e2e_latency_s=estimate.e2e_latency_s + wait,
                   assumptions=(*estimate.assumptions, note))
