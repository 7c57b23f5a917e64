"""A front end that gathers arriving requests before it sends them on: it opens a window at the first arrival
after a release and sends what it holds when the window has lasted `window_s` seconds or holds `max_requests`
requests, whichever comes first (a load harness's batcher, e.g. AMD's MLPerf v4.1 server harness,
`--enable-batcher`: up to 0.3 s or 96 requests, stated in tests/validation/rows_server_throughput.yaml). Every
request waits there before the server sees it; the wait adds to its TTFT and end-to-end latency. What it sends
arrives at once: a request's first step carries the prompts of the other requests released with it to its replica
(`companions`), in place of those of the Poisson arrivals during the step (workload/serving.py `_poisson`).

Poisson arrivals at `rate` (the whole load's: the batcher stands in front of every replica). A window opened by an
arrival at 0 closes at T = min(window_s, S_K), S_K the K-th later arrival, K = max_requests - 1 (an Erlang time).
Every request belongs to one window, so the mean wait is E[waits of a window] / E[requests of a window]. A later
arrival is still held at t < window_s exactly when fewer than K came by t, so with A(t) ~ Poisson(rate t):
  E[waits]    = integral over t < window_s of E[(1 + A(t)) 1{A(t) < K}] dt = (1 / rate) sum_{j<K} (j + 1) P(A(W) > j)
  E[requests] = 1 + E[min(A(W), K)] = 1 + sum_{j<K} P(A(W) > j)
(the integral of a Poisson(rate t) probability over t < W is an Erlang CDF, P(A(W) > j) / rate). Without a count
cap this is (window_s + m window_s / 2) / (1 + m), m = rate x window_s; without a window, (N - 1) / (2 rate)."""

from __future__ import annotations

import math
from dataclasses import replace

__all__ = ["hold_wait", "companions", "burst", "held"]


def _tails(mean: float, most: int):
    """P(A > j) for j < `most`, A ~ Poisson(`mean`), summed term by term in logs (no underflow)."""
    below = 0.0  # P(A <= j)
    for j in range(most):
        below = min(1.0, below + math.exp(j * math.log(mean) - mean - math.lgamma(j + 1)))
        yield 1.0 - below


def _capped(mean: float, most: int | None) -> bool:
    # past mean + 40 sd + 50 every P(A(W) > j) is below 1e-300: the cap no longer binds
    return most is not None and most <= mean + 40 * math.sqrt(mean) + 50


def hold_wait(rate: float, window_s: float, max_requests: int | None = None) -> float:
    """Mean seconds a request waits in the batcher before it is sent (see the module's docstring)."""
    if rate <= 0 or window_s <= 0 or max_requests == 1:
        return 0.0
    mean = rate * window_s
    most = None if max_requests is None else max_requests - 1
    if not _capped(mean, most):
        return (window_s + mean * window_s / 2) / (1 + mean)
    waits, requests = 0.0, 1.0
    for j, over in enumerate(_tails(mean, most)):
        waits += (j + 1) * over
        requests += over
    return waits / rate / requests


def companions(rate: float, window_s: float, max_requests: int | None = None, replicas: int = 1) -> float:
    """Mean number of OTHER requests that reach a request's replica in the same release as it. A window sends
    N = 1 + min(A(W), K) requests (the module's docstring); a request is in a window of n with probability
    n P(N = n) / E[N] (a larger window holds more of the requests). A release is taken as spread evenly over
    `replicas` (the batcher fronts the whole load; how the harness hands a release to its engines is not read): n
    requests make groups of floor(n / R) or ceil(n / R), s_g each, and a request of the release has s_g - 1 others
    in its group, so the count is E[sum_g s_g (s_g - 1)] / E[N] (`_even_pairs`). That is neither seen / R - 1 nor
    (seen - 1) / R, seen = E[N^2] / E[N]: the first counts fractions of a request and goes below zero for a release
    smaller than R, the second is a random spread's count (each other request on the replica with probability 1 / R).
    With one replica it is E[N^2] / E[N] - 1, with E[min(A, K)] = sum_{j<K} P(A > j) and E[min(A, K)^2] =
    sum_{j<K} (2j + 1) P(A > j) (without a cap: m and m + m^2, m = rate x window_s)."""
    if rate <= 0 or window_s <= 0 or max_requests == 1:
        return 0.0
    mean = rate * window_s
    most = None if max_requests is None else max_requests - 1
    if max(replicas, 1) > 1:
        return _spread(mean, most, replicas)
    if _capped(mean, most):
        first = second = 0.0
        for j, over in enumerate(_tails(mean, most)):
            first += over
            second += (2 * j + 1) * over
    else:
        first, second = mean, mean + mean * mean
    return (1 + 2 * first + second) / (1 + first) - 1.0


def _even_pairs(n: int, replicas: int) -> int:
    """sum_g s_g (s_g - 1) over the groups of `n` requests spread evenly over `replicas` (sizes n // R and one more)."""
    q, r = divmod(n, replicas)
    return r * (q + 1) * q + (replicas - r) * q * (q - 1)


def _spread(mean: float, most: int | None, replicas: int) -> float:
    """`companions` over `replicas` > 1: E[sum_g s_g (s_g - 1)] / E[N], N = 1 + min(A, K), A ~ Poisson(`mean`),
    summed over P(A = j) in logs (up to the cap, or to mean + 40 sd + 50 where none binds: the rest is below 1e-300)."""
    capped = _capped(mean, most)
    last = most if capped else int(mean + 40 * math.sqrt(mean) + 50)
    pairs = size = below = 0.0
    for j in range(last):
        p = math.exp(j * math.log(mean) - mean - math.lgamma(j + 1))
        below += p
        pairs, size = pairs + p * _even_pairs(j + 1, replicas), size + p * (j + 1)
    rest = max(1.0 - below, 0.0) if capped else 0.0  # P(A >= K): a full window of K + 1
    pairs, size = pairs + rest * _even_pairs(last + 1, replicas), size + rest * (last + 1)
    return pairs / size


def burst(load) -> float | None:
    """`companions` of `load` (a workload/serving.py Load at the whole load's rate), None without a batcher."""
    if not load.batcher_s or load.rate is None:
        return None
    return companions(load.rate, load.batcher_s, load.batcher_max, load.replicas)


def held(estimate, load):
    """`estimate` (a ServingEstimate, its first step already carrying the burst: `burst`) with the batcher's mean wait
    added to its TTFT and end-to-end latency."""
    wait = hold_wait(load.rate, load.batcher_s, load.batcher_max)
    most = f" or {load.batcher_max:,} requests" if load.batcher_max else ""
    spread = f", a release spread evenly over the {load.replicas} replicas" if load.replicas > 1 else ""
    others = burst(load)
    note = (f"front-end batcher (--batcher-window): arrivals held up to {load.batcher_s:g} s{most} before they are "
            f"sent on; at {load.rate:g} requests/s a request waits {wait * 1e3:,.0f} ms there on average (a window "
            f"opened by one arrival, closed at the window or the count, Poisson sums; workload/front_batcher.py), added "
            f"to TTFT and end-to-end latency"
            + (f"; the burst it releases lands at once: a request's first step carries the prompts of the "
               f"{others:,.1f} other requests released with it to its replica on average (the window it rides in, "
               f"size-biased{spread}; how the harness hands a release to its engines is not read), in place of those "
               f"of Poisson arrivals during the step" if others >= 0.05 else ""))
    return replace(estimate, ttft_s=estimate.ttft_s + wait, e2e_latency_s=estimate.e2e_latency_s + wait,
                   assumptions=(*estimate.assumptions, note))
