"""Reading a `config.json` file into a mapping: the one place a config's bytes are read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sizeup.errors import ConfigError

__all__ = ["read_config_file"]


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The JSON object of a config file; a preset file's `config` member."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: not valid JSON (line {e.lineno}: {e.msg})") from None
    if isinstance(data, dict) and "config" in data and "sizeup" in data:
        data = data["config"]
    return data
