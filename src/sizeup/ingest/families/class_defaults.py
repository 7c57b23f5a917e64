"""transformers' configuration-class defaults per model_type (data/models/class_defaults.yaml), read without importing
transformers: a field a config.json leaves out is what the class gives it when transformers builds the model
(BertConfig's hidden_dropout_prob 0.1, not 0), and the estimate names each default it used."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sizeup.errors import CatalogError

__all__ = ["ClassDefaults", "class_defaults", "filled_note"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassDefaults:
    model_type: str
    class_name: str
    """The transformers configuration class, e.g. "BertConfig"."""
    values: dict[str, Any]
    source: str


@lru_cache(maxsize=1)
def _table() -> dict[str, ClassDefaults]:
    from sizeup.hardware.catalog import builtin_data_dir, read_yaml

    path = builtin_data_dir() / "models" / "class_defaults.yaml"
    data = read_yaml(path)
    types = data.get("model_types") if isinstance(data, dict) else None
    if not isinstance(types, dict):
        raise CatalogError(f"{path}: expected a mapping 'model_types'")
    out = {}
    for model_type, entry in types.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("defaults"), dict) or not entry.get("source") \
                or not entry.get("class"):
            raise CatalogError(f"{path}: model_types.{model_type} needs class, source and a mapping 'defaults'")
        bad = [k for k, v in entry["defaults"].items() if not isinstance(v, (int, float, str, bool))]
        if bad:
            raise CatalogError(f"{path}: model_types.{model_type}.defaults.{bad[0]}: expected a number, string or "
                               "boolean")
        out[model_type] = ClassDefaults(model_type=model_type, class_name=str(entry["class"]),
                                        values=dict(entry["defaults"]), source=str(entry["source"]))
    return out


def class_defaults(model_type: str) -> ClassDefaults | None:
    """The class defaults of `model_type`, or None where the table has no entry."""
    return _table().get(model_type)


def filled_note(defaults: ClassDefaults, filled: dict[str, Any]) -> str:
    """The assumption line naming the defaults a config was read with."""
    values = ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in filled.items())
    return f"filled from {defaults.class_name} defaults (fields the config leaves out; {defaults.source}): {values}"
