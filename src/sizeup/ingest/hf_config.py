"""Hugging Face `config.json` -> `ModelArch`: the exact tensors of a transformer, decided by `model_type`
and explicit fields (never guessed from a size ratio).

The names other code imports from here, gathered in one place: the architecture types
(`sizeup.ingest.arch`), the config parser and its families (`sizeup.ingest.families`), and the loader
that dispatches a name or path to a preset, a config or a file header (`sizeup.ingest.load`).
"""

from __future__ import annotations

from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLASpec, MLPSpec, ModelArch, WeightTensor
from sizeup.ingest.families.registry import model_types, parse_config
from sizeup.ingest.load import list_presets, load_model

__all__ = ["AttentionSpec", "MLASpec", "MLPSpec", "LayerSpec", "ModelArch", "WeightTensor", "parse_config", "load_model",
           "list_presets", "model_types"]
