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
from sizeup.sources import admit_model

__all__ = ["load_model", "list_presets", "MAX_MODEL_CHARS", "preset_meta"]

MAX_MODEL_CHARS = 4096
"""The longest model name or path read (PATH_MAX on Linux); a longer one is refused before any look-up."""


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


def preset_meta(preset: str) -> dict:
    """The `sizeup` block of a preset's file: its id, Hugging Face id, aliases and source."""
    path = _preset_index()[0].get(preset)
    if path is None:
        raise ResolveError(f"no preset {preset!r} (see 'sizeup models')")
    return json.loads(path.read_text()).get("sizeup", {})


def load_model(name_or_path: str) -> ModelArch:
    """A preset (short name or Hugging Face id), a `config.json`, a model folder, or the header of a
    `.safetensors` / `.gguf` file."""
    if len(name_or_path) > MAX_MODEL_CHARS:
        raise ConfigError(f"model name or path of {len(name_or_path):,} characters: expected at most "
                          f"{MAX_MODEL_CHARS:,}")
    if admit_model(name_or_path) == "name":  # under the web UI's policy: a preset, never a look on disk
        return _preset(name_or_path)
    path = user_path(name_or_path)
    if _is_dir(path):
        path = path / "config.json"
        if not os.path.lexists(path):  # one that is there but not a file is refused, saying why, by the reader
            raise ConfigError(f"model folder {name_or_path!r} has no config.json")
    elif path.suffix in (".safetensors", ".gguf") or (_exists(path) and path.suffix != ".json"):
        from sizeup.ingest.headers import model_from_header

        return model_from_header(path)
    if path.suffix == ".json" or _exists(path):
        name = (path.parent.name or path.stem) if path.name == "config.json" else path.stem  # a folder's, or the file's
        return parse_config(read_config_file(path), name=name, where=str(path))
    return _preset(name_or_path)


def _preset(name_or_path: str) -> ModelArch:
    from sizeup.hardware.resolve import closest, normalize_name

    exact = _models_dir() / f"{name_or_path}.json"
    if "/" not in name_or_path and _is_file(exact):  # a preset by its file name: no need to read every preset
        return parse_config(read_config_file(exact), name=exact.stem, where=str(exact))
    paths, names = _preset_index()
    key = normalize_name(name_or_path)
    if key not in names:
        hint = ", ".join(closest(name_or_path, names))
        raise ResolveError(f"unknown model {name_or_path!r}{'; closest: ' + hint if hint else ''} "
                           f"(a preset name, a Hugging Face id of a preset, or a path to config.json)")
    preset = paths[names[key]]
    return parse_config(read_config_file(preset), name=preset.stem, where=str(preset))


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):  # a name too long for the file system, a path through a file: not a folder
        return False


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # too long, or a NUL byte: no preset has such a name
        return False


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):
        return False
