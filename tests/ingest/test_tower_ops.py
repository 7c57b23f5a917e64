"""The ops of what runs ahead of the decoder (ingest/tower_ops.py), from real config.json files
(tests/ingest/configs, sources in SOURCES.md): an encoder-decoder's encoder and cross-attention K/V, a
vision-language model's vision tower. Each matrix-product total equals an independent hand count:
2 · (the stack's weight-matrix parameters, read from the model's own tensor list) · positions, plus
QK^T and PV (2 · 2 · positions² · width per layer), plus the stem conv and the projector written out."""

import json
from pathlib import Path

import pytest

from sizeup.errors import ConfigError
from sizeup.ingest.families.registry import parse_config
from sizeup.ingest.tower_ops import TowerInput, image_grid, tower_ledger
from sizeup.ledger import OpKind

CONFIGS = Path(__file__).parent / "configs"


def _arch(name: str):
    return parse_config(json.loads((CONFIGS / f"{name}.json").read_text()), name)


def _matrix_params(arch, role: str, marker: str) -> int:
    """Weight matrices of the stack's layers, from the model's own tensor list (what memory counts)."""
    return sum(t.numel for t in arch.tensors() if t.role == role and len(t.shape) == 2 and marker in t.name)


def _matmul(ledger) -> int:
    return sum(o.matmul_flops * o.count for o in ledger.ops)


def test_whisper_small_encoder_equals_a_hand_count():
    arch = _arch("whisper-small")  # d_model 768, 12 encoder layers, 80 mel bins, 1500 frames, 12 decoder layers
    ledger = tower_ledger(arch, TowerInput(batch=1, prompt=4))
    frames, h = 1500, 768
    layers = 2 * _matrix_params(arch, "encoder", "encoder.layers.") * frames
    assert _matrix_params(arch, "encoder", "encoder.layers.") == 12 * (4 * h * h + 2 * h * 3072)
    attention = 12 * 2 * 2 * frames * frames * h
    stem = 2 * (2 * frames) * 80 * 3 * h + 2 * frames * h * 3 * h  # conv1 over 3000 mel frames, conv2 stride 2
    cross_kv = 12 * 2 * (2 * frames * h * h)  # k_proj and v_proj of every decoder layer over the 1500 frames
    assert _matmul(ledger) == layers + attention + stem + cross_kv
    assert all(o.scope.startswith("encoder") for o in ledger.ops)


def test_flan_t5_encoder_reads_the_prompt_and_equals_a_hand_count():
    arch = _arch("flan-t5-xl")  # d_model 2048, 32 heads × d_kv 64, d_ff 5120 gated, 24 + 24 layers
    prompt = 300
    ledger = tower_ledger(arch, TowerInput(batch=2, prompt=prompt))
    tokens = 2 * prompt
    layers = 2 * _matrix_params(arch, "encoder", "encoder.layers.") * tokens
    assert _matrix_params(arch, "encoder", "encoder.layers.") == 24 * (4 * 2048 * 2048 + 3 * 2048 * 5120)
    attention = 24 * 2 * 2 * 2 * prompt * prompt * 2048
    cross_kv = 24 * 2 * 2 * tokens * 2048 * 2048
    assert _matmul(ledger) == layers + attention + cross_kv
    bias = [o for o in ledger.ops if o.op == "attention"][0]
    assert "relative-position bias added to each score" in bias.notes


def test_llava_vision_tower_per_image_equals_a_hand_count():
    arch = _arch("llava-1.5-7b-hf")  # CLIP ViT-L/14 at 336: 576 patches + class token, 24 layers of 1024
    one = tower_ledger(arch, TowerInput(batch=1, prompt=600, images=1))
    positions = 577
    layers = 2 * _matrix_params(arch, "vision", "encoder.layers.") * positions
    attention = 24 * 2 * 2 * positions * positions * 1024
    patch = 2 * 576 * (3 * 14 * 14) * 1024
    projector = 2 * 576 * (1024 * 4096 + 4096 * 4096)  # the class token dropped ("default" strategy)
    assert _matmul(one) == layers + attention + patch + projector
    three = tower_ledger(arch, TowerInput(batch=1, prompt=2000, images=3))
    assert _matmul(three) == 3 * _matmul(one)


def test_qwen2_vl_vision_tower_at_448_equals_a_hand_count():
    arch = _arch("qwen2-vl-7b-instruct")  # embed_dim 1280, 32 blocks, patch 14, temporal 2, merge 2
    ledger = tower_ledger(arch, TowerInput(batch=1, prompt=300, images=1, image_hw=(448, 448)))
    patches = 32 * 32
    blocks = 2 * _matrix_params(arch, "vision", "visual.blocks.") * patches
    attention = 32 * 2 * 2 * patches * patches * 1280
    patch = 2 * patches * (3 * 2 * 14 * 14) * 1280
    merger = 2 * (patches // 4) * (5120 * 5120 + 5120 * 3584)
    assert _matmul(ledger) == blocks + attention + patch + merger


@pytest.mark.parametrize("hw, patches, tokens", [
    ((448, 448), 1024, 256),  # the family's stated example: 256 tokens
    ((500, 300), 36 * 22, 36 * 22 // 4),  # each side to the nearest multiple of 28: 504 × 308
    ((10, 10), 16, 4),  # below min_pixels 56 × 56: scaled up to 56 × 56
])
def test_qwen2_vl_images_are_resized_as_its_processor_does(hw, patches, tokens):
    tower = _arch("qwen2-vl-7b-instruct").tower
    got_patches, got_tokens, (h, w) = image_grid(tower, hw)
    assert (got_patches, got_tokens) == (patches, tokens) and h % 28 == 0 and w % 28 == 0


def test_a_huge_image_is_held_to_qwen2_vl_max_pixels():
    _, _, (h, w) = image_grid(_arch("qwen2-vl-7b-instruct").tower, (4000, 3000))
    assert h * w <= 28 * 28 * 1280 and h / w == pytest.approx(4 / 3, rel=0.05)


def test_no_images_no_tower_ops_and_a_decoder_only_model_has_none():
    assert tower_ledger(_arch("llava-1.5-7b-hf"), TowerInput(batch=4, prompt=100)).ops == []
    assert tower_ledger(_arch("phi-2"), TowerInput(batch=1, prompt=100)).ops == []


def test_tensor_parallel_splits_the_tower_and_adds_its_all_reduces():
    arch = _arch("whisper-small")
    one = tower_ledger(arch, TowerInput(batch=1, prompt=4))
    two = tower_ledger(arch, TowerInput(batch=1, prompt=4), tp=2)
    layer = [o for o in one.ops if o.kind == OpKind.MATMUL and ".layers." in o.scope]
    layer2 = [o for o in two.ops if o.kind == OpKind.MATMUL and ".layers." in o.scope]
    assert sum(o.matmul_flops for o in layer2) * 2 == sum(o.matmul_flops for o in layer)
    assert any(o.kind == OpKind.COMM for o in two.ops) and not any(o.kind == OpKind.COMM for o in one.ops)


def test_bad_tower_input_is_one_line():
    with pytest.raises(ConfigError) as e:
        TowerInput(batch=1, prompt=10, images=-1)
    assert "images=-1" in str(e.value) and "\n" not in str(e.value)


def test_gemma3_siglip_tower_per_image_equals_a_hand_count():
    arch = _arch("gemma-3-12b-it")  # SigLIP 1152 × 27 layers (MLP 4304) at 896 / 14: 4096 patches, no class token
    one = tower_ledger(arch, TowerInput(batch=1, prompt=300, images=1))
    positions, h = 64 * 64, 1152
    assert _matrix_params(arch, "vision", "encoder.layers.") == 27 * (4 * h * h + 2 * h * 4304)
    layers = 2 * _matrix_params(arch, "vision", "encoder.layers.") * positions
    attention = 27 * 2 * 2 * positions * positions * h
    patch = 2 * positions * (3 * 14 * 14) * h
    projector = 2 * 256 * h * 3840  # the 64 × 64 grid average-pooled 4 × 4 to 256 tokens, then 1152 -> 3840
    assert _matmul(one) == layers + attention + patch + projector
    ops = {o.scope: o for o in one.ops}
    assert ops["vision_tower.embeddings.patch_embedding"].flops == patch + positions * h  # SigLIP's conv bias
    assert ops["vision_tower.post_layernorm"].op == "layer_norm"  # on every patch, not a class token
    assert ops["vision_tower.projector.avg_pool"].flops == positions * h
    assert ops["vision_tower.projector.mm_soft_emb_norm"].op == "rms_norm"
    assert image_grid(arch.tower, (1000, 300)) == (4096, 256, (896, 896))  # every image resized to 896²
    three = tower_ledger(arch, TowerInput(batch=1, prompt=1000, images=3))
    assert _matmul(three) == 3 * _matmul(one)


def test_mistral3_pixtral_tower_at_448_equals_a_hand_count():
    arch = _arch("mistral-small-3.1-24b-instruct-2503")  # Pixtral 1024 × 24 layers, gated MLP 4096, patch 14, merge 2
    ledger = tower_ledger(arch, TowerInput(batch=1, prompt=300, images=1, image_hw=(448, 448)))
    patches, h = 32 * 32, 1024
    assert _matrix_params(arch, "vision", "transformer.layers.") == 24 * (4 * h * h + 3 * h * 4096)
    layers = 2 * _matrix_params(arch, "vision", "transformer.layers.") * patches
    attention = 24 * 2 * 2 * patches * patches * h
    patch = 2 * patches * (3 * 14 * 14) * h
    tokens = patches // 4  # 2 × 2 patches merged
    projector = 2 * tokens * (4 * h * h + h * 5120 + 5120 * 5120)  # patch merger, linear_1, linear_2 (no biases)
    assert _matmul(ledger) == layers + attention + patch + projector
    ops = {o.scope: o for o in ledger.ops}
    assert ops["vision_tower.ln_pre"].op == "rms_norm" and ops["vision_tower.layers.*.norm0"].op == "rms_norm"
    assert ops["vision_tower.embeddings.patch_embedding"].flops == patch  # no conv bias
    assert any(o.op == "rotary_embedding" for o in ledger.ops)


@pytest.mark.parametrize("hw, patches, tokens, resized", [
    ((448, 448), 1024, 16 * 17, (448, 448)),      # 16 × 16 blocks of 28 px, a break after each row
    ((1024, 768), 74 * 56, 37 * 29, (1036, 784)),  # each side rounded up to a multiple of 28
    ((3080, 1540), 110 * 56, 55 * 29, (1540, 784)),  # longest side 3080 > 1540: halved to 1540 × 770, then rounded
    ((100, 50), 8 * 4, 4 * 3, (112, 56)),
])
def test_mistral3_images_are_resized_as_pixtral_processor_does(hw, patches, tokens, resized):
    """PixtralImageProcessor (transformers 5.24 image_processing_pixtral.py get_resize_output_image_size) with
    the processor's patch_size × spatial_merge_size (28) and longest_edge = vision_config.image_size (1540)."""
    arch = _arch("mistral-small-3.1-24b-instruct-2503")
    assert image_grid(arch.tower, hw) == (patches, tokens, resized)
