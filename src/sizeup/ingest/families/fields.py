"""Reading the fields of a `config.json` mapping: access that names the missing or malformed key, and
the activation and dropout conventions every family shares."""

from __future__ import annotations

from typing import Any

from sizeup.errors import ConfigError

__all__ = ["Fields", "activation", "largest_dropout"]


class Fields:
    """Field access that names the missing or malformed key."""

    def __init__(self, data: dict[str, Any], where: str) -> None:
        self.data, self.where = data, where

    @property
    def model_type(self) -> str:
        return str(self.data.get("model_type") or "")

    def int(self, *keys: str, default: int | None = None) -> int:
        for key in keys:
            value = self.data.get(key)
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ConfigError(f"{self.where}: field {key!r} = {value!r}: expected a non-negative integer")
                return value
        if default is not None:
            return default
        raise ConfigError(f"{self.where}: missing field {keys[0]!r} (needed for model_type "
                          f"{self.data.get('model_type')!r})")

    def get(self, key: str, default: Any = None) -> Any:
        value = self.data.get(key)
        return default if value is None else value


_GELU_TANH = {"gelu_pytorch_tanh", "gelu_new", "gelu_fast", "gelu_tanh"}


def activation(name: Any) -> str:
    """The activation's cost name: "gelu_tanh", "gelu_erf", "silu", or the config's own name."""
    name = str(name or "silu").lower()
    if name in _GELU_TANH:
        return "gelu_tanh"
    if name in ("gelu", "gelu_python"):
        return "gelu_erf"
    return "silu" if name in ("silu", "swish") else name


_DROPOUT_KEYS = ("attention_dropout", "attn_pdrop", "resid_pdrop", "embd_pdrop", "hidden_dropout",
                 "hidden_dropout_prob", "attention_probs_dropout_prob", "dropout")


def largest_dropout(data: dict[str, Any]) -> float:
    values = [data.get(k) for k in _DROPOUT_KEYS]
    return max([float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)] or [0.0])
