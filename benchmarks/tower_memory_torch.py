"""The tower's activation peak (sizeup.price.tower_memory) against PyTorch at full size: transformers' Whisper
encoder (whisper-small) and CLIP vision tower (llava-1.5-7b's ViT-L/14-336), random weights, bf16 on the CPU,
the largest sum of live tensor storages over the forward (weights and the input not counted).

The scaled-down versions of these checks run in the tests (tests/price/test_tower_memory_torch.py); this runs
the real widths (about a minute on two cores). Run from the repo root: python benchmarks/tower_memory_torch.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))  # the live-storage counter is the tests' own

import torch  # noqa: E402

from sizeup.ingest.families.registry import parse_config  # noqa: E402
from sizeup.ingest.tower_ops import TowerInput  # noqa: E402
from sizeup.price.tower_memory import tower_activations  # noqa: E402
from tests.price.test_tower_memory_torch import measured_peak as measured  # noqa: E402

CONFIGS = ROOT / "tests" / "ingest" / "configs"


def main() -> None:
    from transformers import CLIPVisionConfig, WhisperConfig
    from transformers.models.clip.modeling_clip import CLIPVisionModel
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    rows = []
    data = json.loads((CONFIGS / "whisper-small.json").read_text())
    arch = parse_config(data, "whisper-small")
    for attention in ("sdpa", "eager"):
        config = WhisperConfig(**data)
        config._attn_implementation = attention
        encoder = WhisperEncoder(config).to(torch.bfloat16).eval()
        mel = torch.randn(1, data["num_mel_bins"], 3000, dtype=torch.bfloat16)
        counted = tower_activations(arch, TowerInput(batch=1, prompt=4), act_bytes=2, tp=1, fused=attention == "sdpa")
        rows.append(("whisper-small encoder", attention, 1, counted.peak_bytes, measured(encoder, mel)))
    data = json.loads((CONFIGS / "llava-1.5-7b-hf.json").read_text())
    arch = parse_config(data, "llava-1.5-7b")
    for attention in ("sdpa", "eager"):
        config = CLIPVisionConfig(**data["vision_config"])
        config._attn_implementation = attention
        tower = CLIPVisionModel(config).to(torch.bfloat16).eval()
        for images in (1, 2):
            pixels = torch.randn(images, 3, 336, 336, dtype=torch.bfloat16)
            counted = tower_activations(arch, TowerInput(batch=1, prompt=images * 576, images=images), act_bytes=2,
                                        tp=1, fused=attention == "sdpa")
            rows.append(("llava-1.5-7b CLIP tower", attention, images, counted.peak_bytes, measured(tower, pixels)))
    print(f"{'tower':<24} {'attention':<9} {'inputs':>6} {'counted MiB':>12} {'torch MiB':>10} {'ratio':>6}")
    for name, attention, n, c, m in rows:
        print(f"{name:<24} {attention:<9} {n:>6} {c / 2**20:>12.2f} {m / 2**20:>10.2f} {c / m:>6.3f}")


if __name__ == "__main__":
    main()
