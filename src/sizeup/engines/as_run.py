"""The model as an engine runs it, where that differs from the checkpoint's config (`ExecutionModel.as_run`): one
hook, asked by `estimate_inference` and by the planner's memory and batch checks alike, so the two agree.

Sliding window: an engine whose model file for an architecture does not implement the config's window
(`ignores_sliding_window@MODEL_TYPE` 1 in its data file: mlx-lm's Mistral) keeps every token's keys and values and
attends over them all, so its memory and attention are priced without the window.

Multi-head latent attention (DeepSeek-V2/V3/R1, Kimi K2): an engine with latent kernels caches each token's
compressed latent and RoPE key once per layer (576 elements for DeepSeek-V3: ~70 KB a token over 61 layers at
16 bits, the same on every tensor-parallel rank) and attends in the latent space at decode. An engine release
without them decompresses every token's keys and values through kv_b_proj and runs ordinary multi-head attention
over a per-head cache (DeepSeek-V3: 128 heads x (192 + 192) elements a layer with the values padded to the keys'
width, sharded over the ranks by heads): about ten times the cache per GPU at TP 8, and a decode step that reads
it all. Data keys (data/engines/NAME.yaml `settings`, by release like any setting): `mla_latent_cache` (1: latent
kernels; 0: multi-head over decompressed keys and values); an engine whose choice depends on how it is run names
its own key (`ExecutionModel.mla_cache_key`; vLLM's V1 engine: `mla_latent_cache.v1`). `mla_expanded_pad_v`
(default 1): the multi-head path pads values to the keys' width (FlashAttention takes one head size), else caches
them at their own. A key that is absent: latent.
"""

from __future__ import annotations

from dataclasses import replace

from sizeup.ingest.arch import ModelArch

__all__ = ["as_run", "expand_mla"]


def as_run(model, arch: ModelArch) -> tuple[ModelArch, tuple[str, ...]]:
    """`arch` as `model` (an ExecutionModel) runs it, and the sentences saying what changed (none: as the config)."""
    notes = []
    for change in (_without_window, _mla_layout):
        arch, note = change(model, arch)
        if note:
            notes.append(note)
    return arch, tuple(notes)


def expand_mla(arch: ModelArch, pad_v: bool = True) -> ModelArch:
    """`arch` with every MLA layer cached per head (`MLASpec.expanded_v_dim`); unchanged where it has none."""
    layers = []
    for layer in arch.layers:
        a = layer.attention
        if a.mla is not None and not a.mla.expanded_v_dim:
            width = max(a.head_dim, a.mla.v_head_dim) if pad_v else a.mla.v_head_dim
            layer = replace(layer, attention=replace(a, mla=replace(a.mla, expanded_v_dim=width)))
        layers.append(layer)
    return replace(arch, layers=tuple(layers))


def _without_window(model, arch: ModelArch) -> tuple[ModelArch, str | None]:
    key = f"ignores_sliding_window@{arch.model_type}"
    if not model.profile.value(key, 0):
        return arch, None
    windows = sorted({layer.attention.window for layer in arch.layers if layer.attention.window})
    if not windows:
        return arch, None
    layers = tuple(replace(layer, attention=replace(layer.attention, window=None)) if layer.attention.window
                   else layer for layer in arch.layers)
    return replace(arch, layers=layers), (
        f"{model.label} runs {arch.model_type} without the config's sliding window of "
        f"{', '.join(f'{w:,}' for w in windows)} tokens (data/engines/{model.profile.id}.yaml {key}): the KV "
        f"cache keeps every token and attention reads them all")


def _mla_layout(model, arch: ModelArch) -> tuple[ModelArch, str | None]:
    mla = [layer.attention for layer in arch.layers if layer.attention.mla is not None]
    if not mla:
        return arch, None
    key = model.mla_cache_key
    if not mla[0].mla.expanded_v_dim:
        if model.profile.value(key, 1):
            return arch, None
        arch = expand_mla(arch, bool(model.profile.value("mla_expanded_pad_v", 1)))
    a = next(layer.attention for layer in arch.layers if layer.attention.mla is not None)
    source = next((s.split(": ", 1)[1] for s in model.profile.sources if s.startswith(f"{key}: ")), model.profile.id)
    return arch, (f"{model.label} runs {arch.name}'s multi-head latent attention as multi-head attention: keys and "
                  f"values decompressed and cached per head ({a.heads} heads x ({a.head_dim} + "
                  f"{a.mla.expanded_v_dim}) elements a layer instead of the {a.mla.kv_lora_rank + a.mla.qk_rope_head_dim}"
                  f"-element latent), read whole at every decode step ({key}: {source})")
