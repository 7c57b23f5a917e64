"""What an inference estimate runs ahead of the decoder (`ModelArch.tower`): an encoder-decoder's encoder or a
vision-language model's vision tower. It reads the scenario (prompt length, images per sequence, image
size), checks it against the model, builds the tower's ledger (`ingest/tower_ops.py`) and carries its
priced time, which the estimate adds to prefill (TTFT). Decode steps never run it.

T5's encoder reads the prompt: its cross-attention then spans the prompt's tokens, and the decoder's own
prefill is its one start token (`decoder_start_token_id`), as transformers' `generate` begins."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sizeup.errors import ConfigError
from sizeup.ingest.arch import ModelArch
from sizeup.ingest.tower_ops import DEFAULT_IMAGE_SIDE, TowerInput, image_grid, tower_label, tower_positions
from sizeup.ranges import Range

__all__ = ["TowerEstimate", "tower_input", "decoder_arch", "decoder_prompt", "decoder_cache_tokens", "tower_notes"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TowerEstimate:
    """The tower's share of one prefill."""

    kind: str
    """"encoder" | "vision"."""
    inputs: int
    """Sequences (an encoder) or images (a vision tower) through it in one prefill."""
    positions: int
    """Positions per input: encoder tokens or frames, patches per image."""
    flops: int
    latency_s: Range
    """Its priced time (a lower bound when `compute_priced` is False)."""
    bound: str
    compute_priced: bool = True
    decoder_latency_s: Range | None = None
    """The decoder's own prefill beside it; the estimate's TTFT is the sum."""

    @property
    def label(self) -> str:
        return "encoder" if self.kind == "encoder" else "vision tower"

    @property
    def key(self) -> str:
        """Its name in JSON: "encoder" | "vision_tower"."""
        return "encoder" if self.kind == "encoder" else "vision_tower"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "key": self.key, "label": self.label, "inputs": self.inputs, "positions_per_input": self.positions,
                "flops": self.flops, "latency_s": self.latency_s.to_dict() if self.compute_priced else None,
                "latency_lower_bound_s": None if self.compute_priced else self.latency_s.to_dict(),
                "bound": self.bound if self.compute_priced else "unknown", "compute_priced": self.compute_priced,
                "per": "sequence" if self.kind == "encoder" else "image"}


def tower_input(arch: ModelArch, *, batch: int, prompt: int, images: int,
                image_hw: tuple[int, int] | None) -> TowerInput | None:
    """What one prefill feeds `arch`'s tower, checked: images only for a vision tower, and their tokens
    inside the prompt. None when the model has no tower."""
    tower = arch.tower
    if (images or image_hw) and (tower is None or tower.kind != "vision"):
        flag = f"--images {images}" if images else f"--image-size {image_hw[0]}x{image_hw[1]}"
        raise ConfigError(f"{flag}: {arch.name} ({arch.model_type}) has no vision tower sizeup prices (llava, qwen2_vl, gemma3, mistral3)")
    if tower is None:
        return None
    inp = TowerInput(batch=batch, prompt=prompt, images=images, image_hw=image_hw)
    if tower.kind == "vision" and images:
        per_image = image_grid(tower, image_hw)[1]
        if images * per_image > prompt:
            raise ConfigError(f"--images {images}: {images} × {per_image:,} image tokens ({images * per_image:,}) do not "
                              f"fit in --prompt {prompt:,}: the prompt counts its image tokens, expected --prompt >= "
                              f"{images * per_image:,}")
    return inp


def _reads_prompt(arch: ModelArch) -> bool:
    return arch.tower is not None and arch.tower.kind == "encoder" and not arch.tower.positions


def decoder_arch(arch: ModelArch, prompt: int) -> ModelArch:
    """`arch` as the decoder runs it for this prompt: T5's cross-attention spans the prompt's tokens."""
    return replace(arch, cross_source=prompt) if _reads_prompt(arch) else arch


def decoder_prompt(arch: ModelArch, prompt: int) -> int:
    """Tokens of the decoder's own prefill: the prompt, or T5's one start token (the prompt went to the encoder)."""
    return 1 if _reads_prompt(arch) else prompt


def decoder_cache_tokens(arch: ModelArch, prompt: int, context: int) -> int:
    """Tokens the decoder's self-attention cache holds for a `context` of prompt + output: all of them, or for
    T5 the output and its start token (the prompt went to the encoder; the cross-attention cache spans it)."""
    return max(context - prompt, 0) + 1 if _reads_prompt(arch) else context


def tower_notes(arch: ModelArch, inp: TowerInput | None) -> list[str]:
    """What the estimate says about the tower it priced."""
    if inp is None or arch.tower is None:
        return []
    tower, label = arch.tower, tower_label(arch.tower)
    seqs, length = tower_positions(tower, inp)
    if tower.kind == "encoder":
        notes = [f"{label}: {seqs:,} sequence(s) × {length:,} positions, once per request, in prefill (TTFT) with "
                 f"the cross-attention K/V of {arch.num_layers} decoder layers; not in decode steps"]
        if _reads_prompt(arch):
            notes.append(f"{arch.model_type}: the {inp.prompt:,}-token prompt runs through the encoder; the decoder's "
                         f"prefill is its start token; its self-attention cache holds its own tokens (output + the "
                         f"start token), the cross-attention cache the prompt's {inp.prompt:,} encoder positions")
        return notes
    if not inp.images:
        return [f"{label}: no images (--images 0): the prompt is text only, the tower does not run"]
    patches, tokens, (h, w) = image_grid(tower, inp.image_hw)
    size = (f" (every image resized to {tower.image_size} × {tower.image_size})" if inp.image_hw else "") \
        if tower.image_size else (f" (--image-size {inp.image_hw[0]}x{inp.image_hw[1]})" if inp.image_hw else
                                        f" (no --image-size: {DEFAULT_IMAGE_SIDE} × {DEFAULT_IMAGE_SIDE} taken)")
    return [f"{label}: {seqs:,} image(s) of {h} × {w} pixels{size}, {patches:,} positions and {tokens:,} prompt "
            f"tokens each, priced in prefill (TTFT): patch embedding, {tower.layers} layers, projector"]
