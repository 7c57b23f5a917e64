"""Predicted vs published vLLM start-up memory of a vision-language model (tests/validation/
vllm_multimodal_measurements.yaml, a check set): the profiled activation peak (the decoder's dummy step plus the
multimodal profile of price/vllm_multimodal.py) and the KV memory left after weights, that peak, non-torch and
CUDA-graph memory.

Run from the repo root: python benchmarks/validate_vllm_multimodal.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import yaml  # noqa: E402

from sizeup.formats import get_format  # noqa: E402
from sizeup.hardware.catalog import load_catalog  # noqa: E402
from sizeup.ingest.families.registry import parse_config  # noqa: E402
from sizeup.ingest.tower_ops import TowerInput  # noqa: E402
from sizeup.engines import resolve  # noqa: E402
from sizeup.price.memory import MemoryConfig, inference_memory  # noqa: E402
from sizeup.units import GIB  # noqa: E402

DATA = ROOT / "tests" / "validation" / "vllm_multimodal_measurements.yaml"
CONFIGS = ROOT / "tests" / "ingest" / "configs"


def predict(row: dict, catalog, step: int) -> dict[str, float]:
    """GiB: the decoder step, the multimodal profile, their sum (vLLM's "peak activation") and the KV memory,
    at `step` batched tokens and the row's engine settings."""
    data = json.loads((CONFIGS / f"{row['base_config']}.json").read_text())
    data["text_config"] = {**data["text_config"], **row.get("text_config", {})}
    arch = parse_config(data, row["id"])
    engine = resolve(row.get("engine", "vllm"), catalog.device(row["device"]), settings={
        "max_num_batched_tokens": step, "max_num_seqs": row["max_num_seqs"],
        "gpu_memory_utilization": row["gpu_memory_utilization"]})
    m = inference_memory(arch, engine, MemoryConfig(
        batch=1, context=1024, prompt=512, weights=get_format(row["quant"]), tower=TowerInput(batch=1, prompt=512)))
    return {"decoder": m.activations_bytes / GIB, "multimodal": m.multimodal_profile_bytes / GIB,
            "peak": (m.activations_bytes + m.multimodal_profile_bytes) / GIB, "kv": m.kv_cache_bytes / GIB,
            "items": m.multimodal_profile.items}


def main() -> None:
    catalog = load_catalog(include_user=False)
    print("| id | set | batched tokens | images profiled | decoder GiB | multimodal GiB | peak GiB (measured) | "
          "peak error | KV GiB (measured) | KV error |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in yaml.safe_load(DATA.read_text()):
        for step in row["max_num_batched_tokens"]:
            p = predict(row, catalog, step)
            print(f"| {row['id']} | {row['role']} | {step:,} | {p['items']} | {p['decoder']:.2f} | "
                  f"{p['multimodal']:.2f} | {p['peak']:.2f} ({row['peak_activation_gib']:.2f}) | "
                  f"{p['peak'] / row['peak_activation_gib'] - 1:+.0%} | {p['kv']:.1f} ({row['kv_cache_gib']:.1f}) | "
                  f"{p['kv'] / row['kv_cache_gib'] - 1:+.1%} |")


if __name__ == "__main__":
    main()
