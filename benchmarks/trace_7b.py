"""Trace a LLaMA-7B-shaped model (32 layers, hidden 4096, MLP 11008) forward + backward (+ AdamW with
--train) on fake tensors; print wall time and peak RSS (target: RSS < 2 GiB on 2 cores / 24 GiB).

Run from the repo root: python benchmarks/trace_7b.py [--seq 2048] [--train]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--train", action="store_true")
    args = parser.parse_args()
    t0 = time.perf_counter()
    from sizeup.examples import zoo
    from sizeup.ingest.torch_trace import InputSpec, TraceMode, trace_module
    from sizeup.units import GIB

    t1 = time.perf_counter()
    mode = TraceMode.TRAIN if args.train else TraceMode.BACKWARD
    ledger = trace_module(zoo.llama_7b, [InputSpec(shape=(1, args.seq), dtype="int64")], dtype="bf16", mode=mode)
    t2 = time.perf_counter()
    peak = ledger.memory_peak()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB
    print("| mode | seq | params | ops | import (s) | trace (s) | traced peak memory (GiB) | process peak RSS (GiB) |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {mode.value} | {args.seq} | {ledger.params:,} | {len(ledger.ops):,} | {t1 - t0:.1f} | {t2 - t1:.1f} | "
          f"{peak.peak_bytes / GIB:.1f} | {rss / GIB:.2f} |")


if __name__ == "__main__":
    main()
