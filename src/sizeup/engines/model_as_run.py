"""The model as an engine runs it, where that differs from its config: an engine whose model file for an architecture
does not implement the config's sliding window (`ignores_sliding_window@MODEL_TYPE` 1 in its data file) keeps every
token's keys and values and attends over them all, so its memory and attention are priced without the window."""

from __future__ import annotations

from dataclasses import replace

from sizeup.ingest.arch import ModelArch

__all__ = ["model_as_run"]


def model_as_run(model, arch: ModelArch) -> ModelArch:
    """`arch` as `model` (an ExecutionModel) runs it, with an assumption saying what changed; `arch` itself where
    nothing does."""
    key = f"ignores_sliding_window@{arch.model_type}"
    if not model.profile.value(key, 0):
        return arch
    windows = sorted({layer.attention.window for layer in arch.layers if layer.attention.window})
    if not windows:
        return arch
    layers = tuple(replace(layer, attention=replace(layer.attention, window=None)) if layer.attention.window
                   else layer for layer in arch.layers)
    note = (f"{model.label} runs {arch.model_type} without the config's sliding window of "
            f"{', '.join(f'{w:,}' for w in windows)} tokens (data/engines/{model.profile.id}.yaml {key}): the KV "
            f"cache keeps every token and attention reads them all")
    return replace(arch, layers=layers, assumptions=(*arch.assumptions, note))
