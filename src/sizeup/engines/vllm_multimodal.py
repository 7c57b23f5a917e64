"""vLLM's multimodal memory profile: the vision-tower pass and the encoder cache that vLLM's start-up profiling
run reserves for a vision-language model before it sizes the KV pool.

What vLLM does (V1 engine; github.com/vllm-project/vllm, read 2026-12-04):
- `MultiModalBudget` (vllm/multimodal/encoder_budget.py, commit 83e07779744db0665c47267e6eed2da7de86152f; the
  same logic in vllm/v1/worker/utils.py before it moved) takes the most tokens one item of each modality can
  produce (`get_mm_max_tokens_per_item`: the processor's image of most features) and the encoder budget of
  `compute_mm_encoder_budget` (vllm/v1/core/encoder_cache_manager.py, commit
  003ad86e237cfccb7846111921a0230a45005196): the compute budget `max_num_batched_encoder_embeds` and the
  `encoder_cache_size` both default to `max_num_batched_tokens`, raised to one item's tokens where it is larger;
  the budget is the smaller of the two.
- `_get_max_items`: items per prompt = max(1, min(limit_mm_per_prompt, max_model_len // tokens per item)); items
  per batch = max(1, min(budget // tokens per item, max_num_seqs × items per prompt)) (chunked prefill, always on
  in V1, lifts the max_num_batched_tokens cap on requests).
- `GPUModelRunner.profile_run` (vllm/v1/worker/gpu_model_runner.py, commit
  4e1790651fc758c06c7a903dd4cd82364ac91b27) builds that many dummy items of the maximum feature size
  (`_get_mm_dummy_batch`), runs the encoder on them in one call (`embed_multimodal`), keeps every output in
  `encoder_cache`, then runs the decoder's dummy step of `max_num_tokens` and the sampler, and only then clears
  the cache. The worker's `determine_available_memory` subtracts that run's torch peak before the KV blocks.

So the profiled peak is max(the tower's pass over the dummy batch, the decoder's step + the cached embeddings):
the excess over the decoder's step alone is this module's `extra_bytes`, the line an estimate shows as the
multimodal profile. The tower's pass is `price/tower_memory.py`'s, with fused attention (vLLM's ViTs run flash or
memory-efficient kernels), tensor parallelism splitting it as the tower's ledger does, and quick_gelu as the one
fused kernel vLLM's `QuickGELU` custom op is (vllm/model_executor/layers/activation.py): one T·I output beside
fc1's, not the scaled input and sigmoid transformers' x·sigmoid(1.702·x) leaves.

Not modelled: video (Qwen2-VL's processor also takes video; vLLM profiles the modality whose item has the most
tokens, which for Qwen2-VL can be a video of up to max_model_len tokens: the note says so), Gemma 3's
pan-and-scan crops (off by default), `--mm-encoder-tp-mode data`, and `skip_mm_profiling`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from sizeup.errors import ConfigError
from sizeup.ingest.arch import ModelArch, TowerSpec
from sizeup.ingest.tower_ops import TowerInput, smart_resize
from sizeup.units import MIB

__all__ = ["MultimodalProfile", "vllm_multimodal_profile", "profile_image", "QWEN2_VL_CHECKPOINT_MAX_PIXELS"]

QWEN2_VL_CHECKPOINT_MAX_PIXELS = 12845056
"""`max_pixels` of the preprocessor_config.json the Qwen2-VL checkpoints ship (Qwen/Qwen2-VL-7B-Instruct and the
2B/72B siblings: {"min_pixels": 3136, "max_pixels": 12845056, "patch_size": 14, "merge_size": 2}, as copies of
it quoted in public code show, read 2026-12-04). vLLM's Qwen2VLProcessingInfo.get_image_size_with_most_features
smart-resizes a 9,999,999² image within it: 3,584 × 3,584 pixels, 16,384 tokens. sizeup reads config.json
only; transformers' class default (tower_ops.QWEN2_VL_MAX_PIXELS) is what an image is resized within at run time
when no processor file says otherwise, but the profile follows the checkpoint's."""

SCENARIO_SIZE = ("the scenario's image size, as the deploy's --limit-mm-per-prompt '{\"image\": {\"count\": N, "
                 "\"width\": W, \"height\": H}}' sets the dummy's; without it vLLM profiles its largest image")

HUGE_SIDE = 9999999
"""The side vLLM's Qwen2-VL processing info asks the resize for, to find the image of most features."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MultimodalProfile:
    tokens_per_item: int
    """Embeddings one dummy image of the maximum feature size gives the decoder."""
    image_hw: tuple[int, int]
    """That image, (height, width) in pixels as the processor resizes it."""
    limit_per_prompt: int
    items_per_prompt: int
    items: int
    """Dummy images the profile runs through the tower in one pass."""
    encoder_budget_tokens: int
    """The encoder compute budget and encoder cache size (equal by default), in embeddings."""
    tower_peak_bytes: int
    encoder_cache_bytes: int
    """The dummy encoder outputs held in the encoder cache through the decoder's dummy step."""
    peak_bytes: int
    """max(tower pass, decoder step + encoder cache)."""
    extra_bytes: int
    """`peak_bytes` less the decoder step's own peak: what the multimodal profile adds before the KV pool."""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"tokens_per_item": self.tokens_per_item, "image_hw": list(self.image_hw),
                "limit_mm_per_prompt": self.limit_per_prompt, "items_per_prompt": self.items_per_prompt,
                "items": self.items, "encoder_budget_tokens": self.encoder_budget_tokens,
                "tower_peak_bytes": self.tower_peak_bytes, "encoder_cache_bytes": self.encoder_cache_bytes,
                "peak_bytes": self.peak_bytes, "extra_bytes": self.extra_bytes}


def profile_image(tower: TowerSpec, image_hw: tuple[int, int] | None) -> tuple[int, int, tuple[int, int], str]:
    """(embeddings per item, tower positions per item, resized (height, width), where the size came from) of the
    dummy image vLLM profiles:
    `image_hw` where the deploy sets the dummy's size (`--limit-mm-per-prompt '{"image": {"count": N, "width": W,
    "height": H}}'`), else the processor's image of most features."""
    if tower.image_size:  # CLIP / SigLIP: every image resized to one size
        side = tower.image_size
        positions = (side // tower.patch) ** 2 + (1 if tower.class_token else 0)
        return tower.feature_tokens, positions, (side, side), f"every image resized to {side} × {side}"
    f = tower.patch * tower.merge
    if tower.variant == "pixtral":  # longest side scaled to max_image_side, sides rounded up to f
        h, w = image_hw or (tower.max_image_side, tower.max_image_side)
        ratio = max(h, w) / tower.max_image_side
        if ratio > 1:
            h, w = max(1, math.floor(h / ratio)), max(1, math.floor(w / ratio))
        rows, cols = (h - 1) // f + 1, (w - 1) // f + 1
        origin = SCENARIO_SIZE if image_hw else f"the processor's longest edge {tower.max_image_side}"
        # embeddings (the [IMG_BREAK] tokens are no encoder output) and the patches before the merger
        return rows * cols, rows * cols * tower.merge ** 2, (rows * f, cols * f), origin
    if image_hw:
        hb, wb = smart_resize(*image_hw, f, 56 * 56, QWEN2_VL_CHECKPOINT_MAX_PIXELS)
        origin = SCENARIO_SIZE
    else:
        hb, wb = smart_resize(HUGE_SIDE, HUGE_SIDE, f, 56 * 56, QWEN2_VL_CHECKPOINT_MAX_PIXELS)
        origin = f"the checkpoint processor's max_pixels {QWEN2_VL_CHECKPOINT_MAX_PIXELS:,}"
    patches = (hb // tower.patch) * (wb // tower.patch)
    return patches // (tower.merge * tower.merge), patches, (hb, wb), origin


def vllm_multimodal_profile(arch: ModelArch, *, decoder_bytes: int, images: int, image_hw: tuple[int, int] | None,
                            max_model_len: int, act_bytes: int, tp: int, step_tokens: int, max_seqs: int,
                            default_limit: int, tower_pass: Callable[..., Any]) -> MultimodalProfile | None:
    """The multimodal part of vLLM's profiling run for `arch` (None: no vision tower). `images`: images per
    prompt the deploy allows (`limit_mm_per_prompt`; 0: vLLM's default, `default_limit`); `decoder_bytes`: the
    decoder step's own activation peak, which the cached embeddings sit beside; `step_tokens` and `max_seqs`:
    max_num_batched_tokens and max_num_seqs; `tower_pass`: the activation peak of a tower pass (price/tower_memory.py
    `tower_activations`, handed in by the pricing layer)."""
    t = arch.tower
    if t is None or t.kind != "vision":
        return None
    if images < 0 or max_model_len < 1:
        raise ConfigError(f"images {images} and max_model_len {max_model_len}: expected images >= 0 and a positive "
                          f"max_model_len")
    tokens, positions, hw, origin = profile_image(t, image_hw)
    step, seqs = step_tokens, max_seqs
    limit = images or default_limit
    budget = max(step, tokens)  # compute budget and cache size both default to max_num_batched_tokens
    per_prompt = max(1, min(limit, max_model_len // tokens))
    items = max(1, min(budget // tokens, seqs * per_prompt))
    # the dummy batch through the tower: `items` images of `hw` (fused attention), then their embeddings cached
    if t.layer.mlp.act == "quick_gelu":  # vLLM's fused QuickGELU: fc1's output and the activation's, as GELU
        arch = replace(arch, tower=replace(t, layer=replace(t.layer, mlp=replace(t.layer.mlp, act="gelu"))))
    pass_ = tower_pass(arch, TowerInput(batch=1, prompt=items * tokens, images=items, image_hw=hw),
                              act_bytes=act_bytes, tp=tp, fused=True, grid=(positions, tokens))
    cache = items * tokens * arch.hidden * act_bytes
    peak = max(pass_.peak_bytes, decoder_bytes + cache)
    limit_from = f"--images {images} as --limit-mm-per-prompt" if images else "vLLM's default limit_mm_per_prompt"
    notes = [f"vLLM multimodal profile: {items:,} dummy image(s) of {hw[0]} × {hw[1]} pixels ({origin}; "
             f"{tokens:,} embeddings each) through the vision tower in one pass, the encoder budget and cache "
             f"{budget:,} tokens (max_num_batched_tokens {step:,}), {per_prompt:,} image(s) per prompt ({limit_from} "
             f"{limit:,}, max_model_len {max_model_len:,}); the tower's pass peaks at {pass_.peak_bytes / MIB:,.0f} "
             f"MiB, the cached embeddings take {cache / MIB:,.0f} MiB beside the decoder's step: "
             f"+{(peak - decoder_bytes) / MIB:,.0f} MiB before the KV pool"]
    if t.rotary and not t.image_size and t.variant != "pixtral":
        notes.append(f"{arch.model_type}: vLLM profiles the modality whose item has the most tokens; a video (up to "
                     f"max_model_len tokens) can exceed an image, and sizeup profiles images only: a lower bound")
    if not images:
        notes.append("vLLM profiles the vision tower even for text-only traffic; --limit-mm-per-prompt "
                     "'{\"image\": 0}' turns the profile (and the tower) off")
    return MultimodalProfile(tokens_per_item=tokens, image_hw=hw, limit_per_prompt=limit, items_per_prompt=per_prompt,
                             items=items, encoder_budget_tokens=budget, tower_peak_bytes=pass_.peak_bytes,
                             encoder_cache_bytes=cache, peak_bytes=peak, extra_bytes=peak - decoder_bytes,
                             notes=tuple(notes))
