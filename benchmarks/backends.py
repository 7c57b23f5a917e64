"""Backend comparison on this CPU: a small convnet and a small transformer block, each run by PyTorch
eager, torch.compile, channels-last (convnet) and ONNX Runtime.

Run from the repo root: python benchmarks/backends.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sizeup.api import ParsedInput  # noqa: E402
from sizeup.examples import zoo  # noqa: E402
from sizeup.measure.backends import compare_backends  # noqa: E402
from sizeup.measure.harness import TimingPolicy  # noqa: E402

CASES = [("c2f (convnet)", zoo.c2f, (1, 64, 32, 32), 8, ["eager", "channels_last", "compile", "onnxruntime"]),
         ("llama_block (transformer)", zoo.llama_block, (1, 128, 512), 1, ["eager", "compile", "onnxruntime"])]


def main() -> None:
    print("| model | batch | backend | P50 (ms) | P99 (ms) | samples/s | RSS growth (MiB) | max abs diff | setup (s) |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for name, factory, shape, batch, backends in CASES:
        for r in compare_backends(factory, [ParsedInput(shape=shape)], batch, backends,
                                  policy=TimingPolicy(point_budget_s=4.0)):
            d = r.to_dict(batch)
            if d["status"] != "ok":
                print(f"| {name} | {batch} | {d['backend']} | {d['status']}: {d['error']} | | | | | |")
                continue
            diff = "" if d["max_abs_diff"] is None else f"{d['max_abs_diff']:.1e}"
            print(f"| {name} | {batch} | {d['backend']} | {d['latency_p50_s'] * 1e3:.2f} | "
                  f"{d['latency_p99_s'] * 1e3:.2f} | {d['throughput_per_s']:,.1f} | "
                  f"{d['peak_memory_bytes'] / 2**20:,.1f} | {diff} | {d['setup_s']:.2f} |")


if __name__ == "__main__":
    main()
