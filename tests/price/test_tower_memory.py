"""The tower's activations in the inference memory peak (sizeup.price.tower_memory, price/memory.py): hand counts
from the real configs of whisper-small and llava-1.5-7b (tests/ingest/configs/), the phases' max rather than
their sum, and the peak against images per request."""

import json
from pathlib import Path

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.families.registry import parse_config
from sizeup.ingest.tower_ops import TowerInput
from sizeup.engines import resolve
from sizeup.price.memory import MemoryConfig, _activation_peak, inference_memory
from sizeup.price.tower_memory import tower_activations
from sizeup.workload.inference import InferenceConfig, estimate_inference
from sizeup.workload.quantize import get_format

CONFIGS = Path(__file__).parents[1] / "ingest" / "configs"
CATALOG = load_catalog(include_user=False)


def _arch(name: str):
    return parse_config(json.loads((CONFIGS / f"{name}.json").read_text()), name)


WHISPER, LLAVA = _arch("whisper-small"), _arch("llava-1.5-7b-hf")


def test_whisper_small_encoder_by_hand():
    # whisper-small: d_model 768, 12 heads of 64, encoder_ffn_dim 3072 (GELU, ungated), 1500 positions, 80 mel bins
    t, h, heads, ffn, mel = 1500, 768, 12, 3072, 80
    fused = tower_activations(WHISPER, TowerInput(batch=1, prompt=4), act_bytes=2, tp=1, fused=True)
    mlp = 4 * t * h + 2 * t * ffn  # stack input, layer input, residual sum, normed input; fc1 output + GELU
    attention = 3 * t * h + 3 * t * h  # stack input, layer input (the residual), normed input; q, k, v
    stem = 2 * t * mel + 2 * (2 * t) * h  # the 3000 mel frames, conv1's output and its GELU
    assert mlp > max(attention, stem)
    assert fused.peak_bytes == 2 * mlp == 27_648_000  # torch, transformers 5.24 (CPU, bf16): 27,660,000
    assert fused.kept_bytes == 2 * t * h  # the encoder output generate keeps
    math = tower_activations(WHISPER, TowerInput(batch=3, prompt=4), act_bytes=2, tp=1, fused=False)
    scores = 2 * 3 * heads * t * t  # one layer's scores and their scaled successor, 3 inputs, bf16
    assert math.peak_bytes == 2 * (3 * 3 * t * h + 3 * 3 * t * h + scores)


def test_llava_vision_tower_by_hand():
    # CLIP ViT-L/14-336: hidden 1024, 16 heads, MLP 4096 (quick_gelu), 24 layers, 577 positions (576 patches + class)
    # projector 1024 -> 4096 -> 4096; 576 image tokens per image; vision_feature_layer -2 (one feature layer)
    t, h, inter, images = 577, 1024, 4096, 2
    inp = TowerInput(batch=1, prompt=2000, images=images)
    fused = tower_activations(LLAVA, inp, act_bytes=2, tp=1, fused=True)
    mlp = images * (4 * t * h + 3 * t * inter)  # four T·h; fc1's output, 1.702·x and its sigmoid (quick_gelu)
    stem = images * (576 * 3 * 14 * 14 + t * h)  # the pixels and the patch embedding
    projector = images * 576 * (1024 + 2 * 4096)  # features in, linear_1's output and its GELU
    assert mlp > max(stem, projector)
    assert fused.peak_bytes == 2 * mlp == 2 * 18_907_136  # torch, one image, transformers 5.24: 18,907,136
    assert fused.kept_bytes == 2 * images * 576 * 4096  # the image embeddings, 4096 wide
    more = tower_activations(LLAVA, inp, act_bytes=2, tp=1, fused=True, kept_layers=3)  # four feature layers
    assert more.hidden_states_bytes == 2 * 3 * images * t * h
    assert more.peak_bytes == fused.peak_bytes + more.hidden_states_bytes
    eager = tower_activations(LLAVA, inp, act_bytes=2, tp=1, fused=False)
    scores = images * 16 * t * t * (2 + 4 + 4)  # bf16 scores, their fp32 copy, the fp32 softmax
    assert eager.peak_bytes == 2 * images * (3 * t * h + 3 * t * h) + scores
    half = tower_activations(LLAVA, inp, act_bytes=2, tp=2, fused=False)  # 16 heads, 4096 wide: split in two
    assert half.peak_bytes == 2 * images * (3 * t * h + 3 * t * h // 2) + scores // 2


def test_the_peak_is_the_larger_phase_plus_what_the_tower_keeps():
    device, fmt = CATALOG.device("h100"), get_format("bf16")
    inp = TowerInput(batch=1, prompt=2000, images=2)
    cfg = MemoryConfig(batch=1, context=2064, prompt=2000, weights=fmt, compute_dtype="bf16")
    bare = inference_memory(LLAVA, resolve("hf", device), cfg)
    with_tower = inference_memory(LLAVA, resolve("hf", device), MemoryConfig(
        batch=1, context=2064, prompt=2000, weights=fmt, compute_dtype="bf16", tower=inp))
    tower = tower_activations(LLAVA, inp, act_bytes=2, tp=1, fused=True)
    decoder = _activation_peak(LLAVA, 2000, 1, 2, 1)
    assert bare.activations_bytes == decoder
    assert with_tower.activations_bytes == max(tower.peak_bytes, decoder + tower.kept_bytes)
    assert with_tower.activations_bytes < decoder + tower.peak_bytes + tower.kept_bytes  # not the sum
    assert any("vision tower activations" in n for n in with_tower.notes)


def test_the_peak_rises_with_images_per_request():
    device = CATALOG.device("h100")
    peaks = [estimate_inference(LLAVA, device, InferenceConfig(prompt=4000, output=32, images=n),
                                limits=False).memory.activations_bytes for n in range(7)]
    assert peaks == sorted(peaks) and len(set(peaks)) == 7
    six = tower_activations(LLAVA, TowerInput(batch=1, prompt=4000, images=6), act_bytes=2, tp=1, fused=True,
                            kept_layers=1)
    assert peaks[6] == max(six.peak_bytes, peaks[0] + six.kept_bytes)


@pytest.mark.parametrize("engine", ["hf", "llama.cpp"])
def test_every_engine_counts_the_tower(engine):
    """vLLM counts a vision tower through its start-up profile instead, whatever the request's images
    (tests/price/test_vllm_multimodal.py)."""
    device, fmt = CATALOG.device("h100"), get_format("bf16")
    for images in (1, 8):
        inp = TowerInput(batch=1, prompt=5000, images=images)
        base = dict(batch=1, context=5100, prompt=5000, weights=fmt, compute_dtype="bf16")
        a = inference_memory(LLAVA, resolve(engine, device), MemoryConfig(**base))
        b = inference_memory(LLAVA, resolve(engine, device), MemoryConfig(**base, tower=inp))
        assert b.activations_bytes > a.activations_bytes
