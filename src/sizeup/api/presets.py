"""`models`: the model presets sizeup ships (copies of each model's config.json), listed and searched, as
`sizeup models [QUERY]`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ModelInfo", "ModelList", "model_info", "models"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelInfo:
    id: str
    hf_id: str | None
    aliases: tuple[str, ...]
    family: str
    """The config's `model_type`, which decides how sizeup reads it."""
    kind: str
    """decoder (generates text), encoder, encoder-decoder or vision."""
    params: int
    active_params: int
    """Parameters used per token (a mixture of experts uses a few experts of each layer)."""
    layers: int
    context: int | None
    """The largest context the config states (`max_position_embeddings` or its family's key); None: none stated."""

    @property
    def moe(self) -> bool:
        return self.active_params < self.params

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "hf_id": self.hf_id, "aliases": list(self.aliases), "family": self.family,
                "kind": self.kind, "params": self.params, "active_params": self.active_params, "moe": self.moe,
                "layers": self.layers, "context": self.context}


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelList:
    query: str | None
    models: tuple[ModelInfo, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "models": [m.to_dict() for m in self.models]}


def models(query: str | None = None) -> ModelList:
    """Every preset, by family then size; with `query`, those whose id, Hugging Face id, alias or family contains
    every word of it (case and punctuation ignored: 'llama 8b', 'Qwen/Qwen2.5')."""
    from sizeup.hardware.resolve import normalize_name
    from sizeup.ingest.load import list_presets

    words = [normalize_name(w) for w in (query or "").split()]
    found = []
    for preset in list_presets():
        info = model_info(preset)
        names = [normalize_name(n) for n in (info.id, info.hf_id or "", info.family, *info.aliases)]
        if all(any(w in n for n in names) for w in words if w):
            found.append(info)
    found.sort(key=lambda m: (m.family, m.params, m.id))
    return ModelList(query=query, models=tuple(found))


def model_info(preset: str) -> ModelInfo:
    """What a preset is: its names, family, kind, size and context."""
    from sizeup.ingest.load import load_model, preset_meta

    arch = load_model(preset)
    meta = preset_meta(preset)
    if arch.image:
        kind = "vision"
    elif arch.encoder:
        kind = "encoder"
    elif arch.cross_source:
        kind = "encoder-decoder"
    else:
        kind = "decoder"
    return ModelInfo(id=preset, hf_id=meta.get("hf_id") or None, aliases=tuple(meta.get("aliases", ())),
                     family=arch.model_type, kind=kind, params=arch.params, active_params=arch.active_params,
                     layers=arch.num_layers, context=arch.max_context or None)
