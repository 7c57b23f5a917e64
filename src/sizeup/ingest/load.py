"""Where a model comes from: a preset (short name or Hugging Face id), a `config.json`, a model
folder, or the header of a `.safetensors` / `.gguf` file. This module only dispatches; the config
parser (`sizeup.ingest.families`) and the header readers (`sizeup.ingest.headers`) do the reading."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

from sizeup.errors import ConfigError, ResolveError
from sizeup.files import user_path
from sizeup.ingest.arch import ModelArch
from sizeup.ingest.config_file import read_config_file
from sizeup.ingest.families.registry import parse_config

__all__ = ["load_model", "list_presets", "MAX_MODEL_CHARS"]

MAX_MODEL_CHARS = 4096
"""Longest model name or path looked up (PATH_MAX on Linux)."""


def _models_dir() -> Path:
    from sizeup.hardware.catalog import builtin_data_dir

    return builtin_data_dir() / "models"


@lru_cache(maxsize=1)
def _preset_index() -> tuple[dict[str, Path], dict[str, str]]:
    from sizeup.hardware.resolve import normalize_name

    paths, names = {}, {}
    for path in sorted(_models_dir().glob("*.json")):
        paths[path.stem] = path
        try:
            meta = json.loads(path.read_text()).get("sizeup", {})
        except (json.JSONDecodeError, OSError) as e:
            raise ConfigError(f"{path}: not valid JSON ({e})") from e
        for alias in (path.stem, meta.get("hf_id", ""), *meta.get("aliases", [])):
            if alias:
                names.setdefault(normalize_name(alias), path.stem)
    return paths, names


def list_presets() -> list[str]:
    return sorted(_preset_index()[0])


def load_model(name_or_path: str) -> ModelArch:
    """A preset (short name or Hugging Face id), a `config.json`, a model folder, or the header of a
    `.safetensors` / `.gguf` file."""
    if len(name_or_path) > MAX_MODEL_CHARS:
        raise ResolveError(f"unknown model {name_or_path[:40]!r}… ({len(name_or_path):,} characters): expected a "
                           f"preset name, a Hugging Face id of a preset, or a path of at most {MAX_MODEL_CHARS:,} "
                           f"characters")
    try:
        return _load(name_or_path)
    except (OSError, ValueError) as e:  # a path the system refuses to look up (a part over 255 bytes, a NUL byte)
        raise ConfigError(f"model {name_or_path[:80]!r}: neither a preset nor a path that can be read "
                          f"({getattr(e, 'strerror', None) or e})") from None


def _load(name_or_path: str) -> ModelArch:
    from sizeup.hardware.resolve import closest, normalize_name

    path = user_path(name_or_path)
    if path.is_dir():
        path = path / "config.json"
        if not os.path.lexists(path):  # one that is there but not a file is refused, saying why, by the reader
            raise ConfigError(f"model folder {name_or_path!r} has no config.json")
    elif path.suffix in (".safetensors", ".gguf") or (path.exists() and path.suffix != ".json"):
        from sizeup.ingest.headers import model_from_header

        return model_from_header(path)
    if path.suffix == ".json" or path.exists():
        name = (path.parent.name or path.stem) if path.name == "config.json" else path.stem  # a folder's, or the file's
        return parse_config(read_config_file(path), name=name, where=str(path))
    exact = _models_dir() / f"{name_or_path}.json"
    if "/" not in name_or_path and exact.is_file():  # a preset by its file name: no need to read every preset
        return parse_config(read_config_file(exact), name=exact.stem, where=str(exact))
    paths, names = _preset_index()
    key = normalize_name(name_or_path)
    if key not in names:
        hint = ", ".join(closest(name_or_path, names))
        raise ResolveError(f"unknown model {name_or_path!r}{'; closest: ' + hint if hint else ''} "
                           f"(a preset name, a Hugging Face id of a preset, or a path to config.json)")
    preset = paths[names[key]]
    return parse_config(read_config_file(preset), name=preset.stem, where=str(preset))
