"""Pricing speed: one 10,000-op ledger priced on every device of the catalog (target: < 100 ms).

Run from the repo root: python benchmarks/price_speed.py
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sizeup.hardware.catalog import load_catalog  # noqa: E402
from sizeup.ledger import Ledger, OpKind, OpRecord, Phase  # noqa: E402
from sizeup.price.efficiency import default_efficiency  # noqa: E402
from sizeup.price.roofline import LedgerArrays, price  # noqa: E402


def synthetic_ledger(n: int = 10_000, seed: int = 0) -> Ledger:
    rng = random.Random(seed)
    kinds = [OpKind.MATMUL, OpKind.CONV, OpKind.ATTENTION, OpKind.ELEMENTWISE, OpKind.NORM, OpKind.COPY, OpKind.VIEW]
    ops = []
    for i in range(n):
        kind = rng.choice(kinds)
        flops = rng.randint(10**4, 10**11)
        matmul = flops if kind in (OpKind.MATMUL, OpKind.CONV) else (flops // 2 if kind == OpKind.ATTENTION else 0)
        ops.append(OpRecord(op=f"aten.op{i % 50}", kind=kind, scope=f"layers.{i % 32}.block{i % 7}",
                            phase=rng.choice(list(Phase)), flops=flops, matmul_flops=matmul,
                            bytes_read=rng.randint(10**3, 10**9), bytes_written=rng.randint(10**3, 10**8),
                            dtype=rng.choice(["bf16", "fp16", "fp32", "fp8"])))
    return Ledger(name="synthetic", ops=ops)


def main() -> None:
    catalog = load_catalog(include_user=False)
    devices = list(catalog.devices.values())
    ledger = synthetic_ledger()
    tl = time.perf_counter()
    for kind in {d.kind for d in devices}:  # data files load once per process, like the catalog
        default_efficiency(kind)
    load_ms = (time.perf_counter() - tl) * 1e3
    t0 = time.perf_counter()
    arrays = LedgerArrays.from_ledger(ledger)
    t1 = time.perf_counter()
    totals = [price(arrays, d).total_s for d in devices]
    t2 = time.perf_counter()
    print("| ops | devices | load efficiency files (ms, once) | build arrays (ms) | price all devices (ms) | "
          "per device (ms) |")
    print("|---|---|---|---|---|---|")
    print(f"| {len(ledger.ops):,} | {len(devices)} | {load_ms:.1f} | {(t1 - t0) * 1e3:.1f} | {(t2 - t1) * 1e3:.1f} | "
          f"{(t2 - t1) * 1e3 / len(devices):.2f} |")
    assert len(totals) == len(devices)


if __name__ == "__main__":
    main()
