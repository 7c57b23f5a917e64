"""Served latency under Poisson arrivals, taken apart: how much of a latency row's error is the step time and how much
the queue (workload/serving.py `_poisson`) makes of it near saturation.

For each TPOT row of a `--rps R` command (MLPerf Server, vLLM PR rows) the requests decoding at once follow from the
measured TPOT by Little's law, n = R / replicas x (O - 1) x TPOT (each request decodes O - 1 tokens after its
first, at TPOT each; O: the estimate's mean output). The same command at `--concurrency n x replicas` (a closed loop
holding that batch) prices the step at the measured operating point: its TPOT against the measured TPOT is the step
time's own error, well conditioned. The `--rps` estimate's TPOT error beside it is that error after the queue: at a
utilization near 1 the batch a rate needs grows as 1 / (1 - R x O x b) (b: the step time one more running request
adds), so a step a few per cent short puts the batch, TPOT and TTFT tens of per cent short. `util` is the estimate's
utilization (rate / saturated rate) at --rps; `capacity` its most requests running at once (per replica).

Run from the repo root: python benchmarks/serving_operating_point.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]

from validate_serving import selected  # noqa: E402
from validation.runner import RowError, run_json  # noqa: E402

_RPS = re.compile(r"--rps\s+([0-9.]+)")
_REPLICAS = re.compile(r"--replicas\s+(\d+)")
_BATCHER = re.compile(r"\s--batcher-(window|max)\s+\S+")
"""A front-end batcher's flags need --rps: the closed loop drops them (the batch it holds is the measured one)."""


def _load(command: str) -> dict:
    return run_json(command)["throughput_under_load"]


def main() -> None:
    rows = [r for r in selected() if r.metric == "tpot_s" and _RPS.search(r.command)]
    print("| id | role | util | capacity | measured TPOT | n (Little) | TPOT at --rps | error | TPOT at n | step error "
          "| TTFT at n / measured |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    ttfts = {(r.command, r.source): r.value for r in selected() if r.metric == "ttft_s"}
    for r in rows:
        rate = float(_RPS.search(r.command).group(1))
        replicas = int(m.group(1)) if (m := _REPLICAS.search(r.command)) else 1
        at_rate = _load(r.command)
        out = at_rate["requests"]["output_tokens"]
        n = rate / replicas * (out - 1) * r.value
        closed = _BATCHER.sub("", _RPS.sub(f"--concurrency {max(1, round(n * replicas))}", r.command))
        try:
            at_n = _load(closed)
        except RowError as e:
            print(f"| {r.id} | {r.role} | closed loop refused: {e} |")
            continue
        tpot_rate, tpot_n = at_rate["tpot_s"]["typical"], at_n["tpot_s"]["typical"]
        ttft = ttfts.get((r.command, r.source))
        ttft_note = f"{at_n['ttft_s']['typical'] / ttft:.2f}" if ttft else "-"
        cap = at_rate["capacity"] // replicas
        held = " (capped)" if n > cap else ""
        print(f"| {r.id} | {r.role} | {at_rate['utilization'] or 0:.2f} | {cap:,} | {r.value:.4g} | {n:,.0f}{held} | "
              f"{tpot_rate:.4g} | {tpot_rate / r.value - 1:+.0%} | {tpot_n:.4g} | {tpot_n / r.value - 1:+.0%} | "
              f"{ttft_note} |")


if __name__ == "__main__":
    main()
