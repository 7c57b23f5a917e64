"""Vision-language wrappers (Gemma 3, Mistral 3; LLaVA has its own family, llava.py): the language model of `text_config`, read by
its own family; the vision tower is not counted, and the result says so."""

from __future__ import annotations

from dataclasses import replace

from sizeup.errors import ConfigError
from sizeup.ingest.arch import ModelArch
from sizeup.ingest.families.fields import Fields
from sizeup.ingest.families.registry import family, parse_config

_TEXT_MODEL_TYPES = {"gemma3": "gemma3_text"}
"""The text model_type a wrapper implies when its text_config names none."""


@family("gemma3", "mistral3")
def read_multimodal(c: Fields, name: str) -> ModelArch:
    model_type = c.model_type
    text = c.mapping("text_config")
    if text is None:
        raise ConfigError(f"{c.where}: missing field 'text_config' (the language model, needed for model_type "
                          f"{model_type!r})")
    inner = dict(text)
    if model_type in _TEXT_MODEL_TYPES:
        inner.setdefault("model_type", _TEXT_MODEL_TYPES[model_type])
    arch = parse_config(inner, name, f"{c.where} (text_config)")
    return replace(arch, assumptions=arch.assumptions + (f"{model_type}: the language model only; the vision tower "
                                                         f"(vision_config) is not counted",))
