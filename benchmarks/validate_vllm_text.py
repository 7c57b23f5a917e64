"""Predicted vs published vLLM start-up memory of text models (tests/validation/vllm_text_measurements.yaml, a check
set): the profiled activation peak (the larger of the forward step and the dummy sampler phase, price/memory.py)
and the KV memory left after weights, that peak, non-torch and CUDA-graph memory.

Run from the repo root: python benchmarks/validate_vllm_text.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import yaml  # noqa: E402

from sizeup.formats import get_format  # noqa: E402
from sizeup.hardware.catalog import load_catalog  # noqa: E402
from sizeup.ingest.hf_config import load_model  # noqa: E402
from sizeup.engines import resolve  # noqa: E402
from sizeup.price.memory import MemoryConfig, inference_memory  # noqa: E402
from sizeup.units import GIB  # noqa: E402

DATA = ROOT / "tests" / "validation" / "vllm_text_measurements.yaml"


def predict(row: dict, catalog) -> dict[str, float]:
    """GiB: sizeup's weights, profiled peak and KV memory at the row's settings (vLLM's own defaults for the
    device where the row names no max_num_batched_tokens / max_num_seqs)."""
    settings = {"gpu_memory_utilization": row["gpu_memory_utilization"]}
    for key in ("max_num_batched_tokens", "max_num_seqs"):
        if row.get(key):
            settings[key] = row[key]
    vllm = resolve(row.get("engine", "vllm"), catalog.device(row["device"]), settings=settings)
    m = inference_memory(load_model(row["model"]), vllm,
                         MemoryConfig(batch=1, context=1024, prompt=512, weights=get_format(row["quant"]),
                                      tp=row.get("tp", 1)))
    return {"weights": m.weights_bytes / GIB, "peak": (m.activations_bytes + m.multimodal_profile_bytes) / GIB,
            "kv": m.kv_cache_bytes / GIB}


def rows() -> list[dict]:
    return yaml.safe_load(DATA.read_text())


def main() -> None:
    catalog = load_catalog(include_user=False)
    print("| id | set | weights GiB (measured) | peak GiB (measured) | peak error | KV GiB (measured) | KV error |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for row in rows():
        p = predict(row, catalog)
        kv = row.get("kv_cache_gib")
        kv_cell = f"{p['kv']:.1f} ({kv:.1f}) | {p['kv'] / kv - 1:+.1%}" if kv else f"{p['kv']:.1f} (-) | -"
        print(f"| {row['id']} | {row['role']} | {p['weights']:.2f} ({row['weights_gib']:.2f}) | {p['peak']:.2f} "
              f"({row['peak_activation_gib']:.2f}) | {p['peak'] / row['peak_activation_gib'] - 1:+.0%} | {kv_cell} |")


if __name__ == "__main__":
    main()
