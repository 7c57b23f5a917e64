"""Speed of `sizeup estimate` (targets: under 1 s as a process, under 50 ms in process).

Run from the repo root: python benchmarks/estimate_speed.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

CASES = [("llama-3.1-8b", "rtx-4090", "q4_k_m", "llama.cpp", 1), ("qwen2.5-72b", "h100", "fp8", "vllm", 2),
         ("mixtral-8x7b", "a100-80g", "awq-int4", "vllm", 1), ("deepseek-v3", "h200", "fp8", "vllm", 8)]


def main() -> None:
    from sizeup.api import estimate

    print("| model | device | quant | engine | GPUs | in-process median (ms) | process (s) | torch imported |")
    print("|---|---|---|---|---|---:|---:|---|")
    for model, device, quant, engine, gpus in CASES:
        estimate(model, device=device, quant=quant, engine=engine, gpus=gpus)  # warm the data files
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            estimate(model, device=device, quant=quant, engine=engine, gpus=gpus)
            times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", (
            "import sys; from sizeup.cli.main import main; rc = main(sys.argv[1:]); "
            "print('TORCH' if 'torch' in sys.modules else 'NOTORCH', file=sys.stderr); sys.exit(rc)"),
            "estimate", model, "--device", device, "--quant", quant, "--engine", engine, "--gpus", str(gpus), "--json"],
            capture_output=True, text=True, env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
        elapsed = time.perf_counter() - t0
        torch = "yes" if "TORCH" in proc.stderr.split() else "no"
        print(f"| {model} | {device} | {quant} | {engine} | {gpus} | {statistics.median(times) * 1e3:.1f} | "
              f"{elapsed:.2f} | {torch} |")


if __name__ == "__main__":
    main()
