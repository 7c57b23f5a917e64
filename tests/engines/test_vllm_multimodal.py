"""vLLM's multimodal profile (sizeup.engines.vllm_multimodal, engines/vllm.py's memory): the dummy image batch
and encoder budget as vLLM's own code sizes them, hand-counted from the real configs of llava-1.5-7b, Qwen2-VL-7B,
gemma-3-12b and Mistral-Small-3.1 (tests/ingest/configs/).

The rules the golden values follow (github.com/vllm-project/vllm): compute_mm_encoder_budget
(vllm/v1/core/encoder_cache_manager.py, commit 003ad86e237cfccb7846111921a0230a45005196): budget = max(
max_num_batched_tokens, tokens per item); MultiModalBudget._get_max_items (vllm/multimodal/encoder_budget.py,
commit 83e07779744db0665c47267e6eed2da7de86152f): items per prompt = max(1, min(limit, max_model_len // tokens)),
items per batch = max(1, min(budget // tokens, max_num_seqs × items per prompt)); GPUModelRunner.profile_run
(vllm/v1/worker/gpu_model_runner.py, commit 4e1790651fc758c06c7a903dd4cd82364ac91b27) keeps every dummy output in
the encoder cache through the decoder's dummy step."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.families.registry import parse_config
from sizeup.ingest.tower_ops import TowerInput
from sizeup.engines import resolve
from sizeup.engines.profile import engine_profile
from sizeup.engines.vllm_multimodal import QWEN2_VL_CHECKPOINT_MAX_PIXELS, vllm_multimodal_profile
from sizeup.price.memory import MemoryConfig, _activation_peak, inference_memory
from sizeup.price.tower_memory import tower_activations
from sizeup.workload.quantize import get_format

CONFIGS = Path(__file__).parents[1] / "ingest" / "configs"
CATALOG = load_catalog(include_user=False)
LIMIT = int(engine_profile("vllm").value("limit_mm_per_prompt", 999))


def _arch(name: str):
    return parse_config(json.loads((CONFIGS / f"{name}.json").read_text()), name)


LLAVA, QWEN, GEMMA, MISTRAL = (_arch(n) for n in ("llava-1.5-7b-hf", "qwen2-vl-7b-instruct", "gemma-3-12b-it",
                                                  "mistral-small-3.1-24b-instruct-2503"))


def _profile(arch, images=0, image_hw=None, tp=1, decoder_bytes=0, max_model_len=None, step_tokens=8192,
             max_seqs=256):
    """The profile at `vllm serve`'s small-GPU batch settings unless others are given."""
    return vllm_multimodal_profile(arch, decoder_bytes=decoder_bytes, images=images, image_hw=image_hw,
                                   max_model_len=arch.max_context if max_model_len is None else max_model_len,
                                   act_bytes=2, tp=tp, step_tokens=step_tokens, max_seqs=max_seqs,
                                   default_limit=LIMIT, tower_pass=tower_activations)


def test_llava_profiles_fourteen_clip_images_by_hand():
    # 336 / 14 = 24 patches a side: 576 image tokens (the class token dropped), 577 CLIP positions;
    # budget max(8192, 576) = 8192 -> 8192 // 576 = 14 images; max_model_len 4096 (LlamaConfig's default) allows
    # 4096 // 576 = 7 a prompt, × 256 sequences, so the budget binds
    p = _profile(LLAVA)
    assert (p.tokens_per_item, p.image_hw, p.encoder_budget_tokens) == (576, (336, 336), 8192)
    assert (p.limit_per_prompt, p.items_per_prompt, p.items) == (999, 7, 14)
    assert p.encoder_cache_bytes == 14 * 576 * 4096 * 2 == 66_060_288  # text width 4096, bf16
    # CLIP-L (1024 wide, MLP 4096, quick_gelu fused in vLLM): the MLP stage over 14 × 577 positions holds
    # four T·h (stack input, layer input, residual sum, normed input) and fc1's output plus the activation's
    t = 14 * 577
    assert p.tower_peak_bytes == 2 * t * (4 * 1024 + 2 * 4096) == 198_524_928


def test_qwen2_vl_profiles_one_image_at_the_checkpoint_pixel_bound():
    # vLLM smart-resizes a 9,999,999² image within the checkpoint's max_pixels 12,845,056 = 3584²:
    # 3584 / 14 = 256 patches a side, 65,536 patches, / 2² merge = 16,384 tokens; the budget rises to one item
    assert QWEN2_VL_CHECKPOINT_MAX_PIXELS == 3584 ** 2
    p = _profile(QWEN)
    assert (p.tokens_per_item, p.image_hw, p.encoder_budget_tokens, p.items) == (16384, (3584, 3584), 16384, 1)
    assert p.items_per_prompt == 2  # max_model_len 32,768 // 16,384
    assert p.encoder_cache_bytes == 16384 * 3584 * 2
    # the ViT (1280 wide, MLP 5120): 65,536 positions in its MLP stage
    assert p.tower_peak_bytes == 2 * 65536 * (4 * 1280 + 2 * 5120) == 2_013_265_920
    assert any("video" in n for n in p.notes)  # the modality it does not profile is named


def test_the_scenario_image_size_and_limit_set_the_dummy_batch():
    # 448 × 448 is a multiple of 28: 32 × 32 patches, 256 tokens -> 8192 // 256 = 32 images
    p = _profile(QWEN, images=1, image_hw=(448, 448))
    assert (p.tokens_per_item, p.image_hw, p.items, p.limit_per_prompt) == (256, (448, 448), 32, 1)
    # max_num_seqs 4: 4 sequences × 1 image bound the batch below the budget's 32; 3 images a prompt: 12
    assert _profile(QWEN, max_seqs=4, images=1, image_hw=(448, 448)).items == 4
    assert _profile(QWEN, max_seqs=4, images=3, image_hw=(448, 448)).items == 12
    # a larger step budget takes more images: 16384 // 256
    assert _profile(QWEN, step_tokens=16384, image_hw=(448, 448)).items == 64


def test_gemma3_and_mistral3_dummy_images():
    # gemma-3: 896 × 896, 64² = 4096 SigLIP patches pooled to 256 tokens -> 32 images
    g = _profile(GEMMA)
    assert (g.tokens_per_item, g.image_hw, g.items) == (256, (896, 896), 32)
    # Mistral-Small-3.1 (Pixtral, longest edge 1540, 28-pixel blocks): 55 × 55 = 3,025 embeddings (the row
    # breaks are prompt tokens, not encoder output) -> 8192 // 3025 = 2 images
    m = _profile(MISTRAL)
    assert (m.tokens_per_item, m.image_hw, m.items) == (3025, (1540, 1540), 2)


def test_the_extra_is_the_larger_of_the_tower_pass_and_the_cache_over_the_decoder_step():
    decoder = _activation_peak(QWEN, 8192, 256, 2, 1)
    p = _profile(QWEN, decoder_bytes=decoder)
    assert p.peak_bytes == max(p.tower_peak_bytes, decoder + p.encoder_cache_bytes)
    assert p.extra_bytes == p.peak_bytes - decoder > p.encoder_cache_bytes  # the ViT pass dominates here
    small = _profile(LLAVA, decoder_bytes=_activation_peak(LLAVA, 8192, 256, 2, 1), max_model_len=4096)
    assert small.extra_bytes == small.encoder_cache_bytes  # the decoder's step outweighs CLIP's pass


def test_tensor_parallel_splits_the_tower_pass():
    one, two = _profile(QWEN), _profile(QWEN, tp=2)
    assert two.tower_peak_bytes < one.tower_peak_bytes and two.encoder_cache_bytes == one.encoder_cache_bytes


def _memory(arch, engine="vllm", images=1, prompt=2000):
    return inference_memory(arch, resolve(engine, CATALOG.device("h100")), MemoryConfig(
        batch=1, context=prompt + 200, prompt=prompt, weights=get_format("bf16"), compute_dtype="bf16",
        tower=TowerInput(batch=1, prompt=prompt, images=images)))


def test_the_profile_comes_out_of_the_kv_pool_on_its_own_line():
    vlm = _memory(QWEN)
    text = _memory(replace(QWEN, tower=None))  # the same weights, no vision profile
    assert vlm.multimodal_profile is not None and text.multimodal_profile is None
    # the excess over the decoder's step, less what the sampler phase (which runs beside the encoder cache and is
    # larger than the step here) already covers
    assert 0 < vlm.multimodal_profile_bytes <= vlm.multimodal_profile.extra_bytes
    assert vlm.activations_bytes == text.activations_bytes  # the decoder's step stays its own line
    assert text.kv_cache_bytes - vlm.kv_cache_bytes == pytest.approx(vlm.multimodal_profile_bytes, abs=1)
    assert vlm.total_bytes == (vlm.weights_bytes + vlm.kv_cache_bytes + vlm.activations_bytes
                               + vlm.multimodal_profile_bytes + vlm.overhead_bytes)
    d = vlm.to_dict()
    assert d["multimodal_profile_bytes"] == vlm.multimodal_profile_bytes
    assert d["multimodal_profile"]["items"] == 1 and d["multimodal_profile"]["image_hw"] == [3584, 3584]
    assert any(n.startswith("vLLM multimodal profile") for n in vlm.notes)


def test_the_request_images_do_not_move_the_profile_and_other_engines_have_none():
    # vLLM reserves the profile at start-up: 1 or 6 images a request, the same 14-image CLIP batch
    assert _memory(LLAVA, images=1).multimodal_profile_bytes == _memory(LLAVA, images=6, prompt=4000) \
        .multimodal_profile_bytes
    assert _memory(LLAVA, images=0).multimodal_profile.limit_per_prompt == 999  # vLLM's default limit
    hf = _memory(LLAVA, engine="hf")
    assert hf.multimodal_profile is None and hf.multimodal_profile_bytes == 0


def test_bad_input_is_a_one_line_error():
    with pytest.raises(ConfigError, match=r"images -1 .*expected images >= 0") as e:
        _profile(LLAVA, images=-1, max_model_len=4096)
    assert "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="max_model_len 0"):
        _profile(LLAVA, images=1, max_model_len=0)


def test_the_estimate_shows_the_line_in_text_and_json():
    from sizeup.api import estimate
    from sizeup.cli.commands.estimate import render_estimate

    e = estimate(str(CONFIGS / "llava-1.5-7b-hf.json"), device="h100", engine="vllm", prompt=1000, output=100,
                 images=1)
    assert "vLLM multimodal profile" in render_estimate(e)
    assert e.memory.to_dict()["multimodal_profile"]["items"] == 14
    hf = estimate(str(CONFIGS / "llava-1.5-7b-hf.json"), device="h100", engine="hf", prompt=1000, output=100,
                  images=1)
    assert "multimodal profile" not in render_estimate(hf)
