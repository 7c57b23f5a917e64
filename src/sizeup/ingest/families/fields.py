"""Reading the fields of a `config.json` mapping: typed, range-checked access shared by every family.

Every numeric field a family reads goes through `Fields`: an integer is an integer (a string, a float
or a boolean where a number belongs is refused, not coerced), positive where it must be, and under a
plausible bound that the error names. A config's sizes drive the loops that build a model, so the
bounds here are what keeps a hostile `num_hidden_layers` from running until it is killed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sizeup.errors import ConfigError
from sizeup.ingest.limits import (CHANNELS, CONTEXT, EXPERTS, HEAD_DIM, HEADS, HIDDEN, IMAGE, INTERMEDIATE, LABELS, LAYERS,
                                  MAX_PARAMS, MAX_PARAMS_TEXT, VOCAB, Bound)

__all__ = ["Bound", "Fields", "activation", "ACTIVATIONS", "LAYERS", "HIDDEN", "INTERMEDIATE", "VOCAB", "HEADS", "HEAD_DIM", "EXPERTS",
           "CONTEXT", "IMAGE", "CHANNELS", "LABELS", "MAX_PARAMS", "show", "largest_dropout", "check_params"]


def show(value: Any) -> str:
    """A value for a one-line error: long numbers and strings cut short."""
    if isinstance(value, int) and not isinstance(value, bool):
        digits = len(str(abs(value))) if abs(value) < 10**4000 else 4000
        return f"{value:,}" if digits <= 24 else f"a {digits}-digit number"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a float"
    return {str: "a string", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


class Fields:
    """Typed, range-checked access to a config's fields; every error names the field, its value and
    what was expected. `sources` names where a field came from when it was not a config.json key
    (GGUF metadata: {"num_hidden_layers": "llama.block_count"})."""

    def __init__(self, data: Mapping[str, Any], where: str, sources: Mapping[str, str] | None = None,
                 defaults: Mapping[str, Any] | None = None) -> None:
        self.data, self.where, self.sources = dict(data), where, dict(sources or {})
        self.defaults = dict(defaults or {})
        """transformers' class defaults of the model_type (ingest.families.class_defaults): what a field the config
        leaves out (absent, not null) is read as."""
        self.filled: dict[str, Any] = {}
        """The class defaults read so far, in the order read: the estimate names them."""

    def _first(self, keys: tuple[str, ...]) -> tuple[str, Any]:
        """The first of `keys` the config gives (null counts as absent), else the first with a class default for a
        field the config leaves out (remembered in `filled`), else (keys[0], None)."""
        for key in keys:
            if self.data.get(key) is not None:
                return key, self.data[key]
        for key in keys:
            if key not in self.data and self.defaults.get(key) is not None:
                self.filled[key] = self.defaults[key]
                return key, self.defaults[key]
        return keys[0], None

    def _field(self, key: str) -> str:
        source = self.sources.get(key)
        return f"field {key!r}" + (f" (GGUF {source!r})" if source else "")

    def error(self, key: str, value: Any, expected: str) -> ConfigError:
        return ConfigError(f"{self.where}: {self._field(key)} = {show(value)}: {expected}")

    def _missing(self, key: str) -> ConfigError:
        source = self.sources.get(key)
        gguf = f" (GGUF {source!r}, not in the file)" if source else ""
        return ConfigError(f"{self.where}: missing field {key!r}{gguf} (needed for model_type {self.model_type!r})")

    def has(self, key: str) -> bool:
        """Whether the config itself gives `key` (a class default does not count)."""
        return self.data.get(key) is not None

    @property
    def model_type(self) -> str:
        value = self.data.get("model_type")
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.error("model_type", value, "expected a string")
        return value

    def int(self, *keys: str, bound: Bound, default: int | None = None, minimum: int = 1) -> int:
        """The first of `keys` present, an integer from `minimum` to `bound.maximum`; `default` when
        none is present (null counts as absent), else an error naming the first key."""
        key, value = self._first(keys)
        if value is not None:
            return self._checked_int(key, value, bound, minimum)
        if default is not None:
            return default
        raise self._missing(keys[0])

    def optional_int(self, key: str, *, bound: Bound, minimum: int = 1) -> int | None:
        value = self._first((key,))[1]
        return None if value is None else self._checked_int(key, value, bound, minimum, optional=True)

    def _checked_int(self, key: str, value: Any, bound: Bound, minimum: int, optional: bool = False) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            what = "a positive integer or null" if optional else "a non-negative integer"
            raise self.error(key, value, f"expected {what}, got {_kind(value)}")
        if value < minimum:
            raise self.error(key, value, "expected a positive integer" if minimum == 1 else f"expected at least {minimum}")
        if value > bound.maximum:
            raise self.error(key, value, f"expected at most {bound.maximum:,} (the bound on {bound.what})")
        return value

    def window(self, key: str = "sliding_window") -> int | None:
        """A sliding-window length: a positive integer, or null for global attention."""
        return self.optional_int(key, bound=CONTEXT)

    def flag(self, key: str, default: bool) -> bool:
        value = self._first((key,))[1]
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(key, value, f"expected true or false, got {_kind(value)}")
        return value

    def text(self, *keys: str, default: str) -> str:
        key, value = self._first(keys)
        if value is not None:
            if not isinstance(value, str):
                raise self.error(key, value, f"expected a string, got {_kind(value)}")
            return value
        return default

    def texts(self, key: str, *, most: int = LAYERS.maximum) -> list[str]:
        """A list of strings (empty when absent), of at most `most` items."""
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(key, value, "expected a list of strings")
        if len(value) > most:
            raise self.error(key, f"{len(value):,} items", f"expected at most {most:,}")
        return value

    def indices(self, key: str, *, below: int) -> frozenset[int]:
        """A list of layer indices, each from 0 to `below` - 1 (empty when absent)."""
        value = self.data.get(key)
        if value is None:
            return frozenset()
        if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in value):
            raise self.error(key, value, "expected a list of layer indices")
        if any(not 0 <= v < below for v in value):
            raise self.error(key, value, f"expected layer indices from 0 to {below - 1}")
        return frozenset(value)

    def mapping(self, key: str) -> dict[str, Any] | None:
        value = self.data.get(key)
        if value is not None and not isinstance(value, dict):
            raise self.error(key, value, f"expected an object, got {_kind(value)}")
        return value

    def probability(self, key: str) -> float:
        """A probability (dropout): a number from 0 to 1; the class default, else 0, when absent."""
        value = self._first((key,))[1]
        if value is None:
            return 0.0
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise self.error(key, value, "expected a probability from 0 to 1")
        return float(value)

    def activation(self, *keys: str, default: str) -> str:
        """The cost name of the activation the first of `keys` names (`default` when none is present); a name
        transformers has no activation for is refused, not costed as some other."""
        name = self.text(*keys, default=default)
        if name.lower() not in ACTIVATIONS:
            key = next((k for k in keys if self.has(k)), keys[0])
            raise self.error(key, name, f"expected an activation transformers knows ({', '.join(sorted(ACTIVATIONS))})")
        return activation(name)

    def choice(self, key: str, *, default: str, allowed: tuple[str, ...]) -> str:
        """A string field that must be one of `allowed` (`default` when absent)."""
        value = self.text(key, default=default)
        if value not in allowed:
            raise self.error(key, value, f"expected one of {', '.join(repr(a) for a in allowed)}")
        return value

    def layer_types(self, layers: int, allowed: tuple[str, ...]) -> list[str] | None:
        """`layer_types`, one entry of `allowed` per layer; None when the config has none (the family's own
        pattern applies). A list of the wrong length or with an unknown entry is refused, never replaced by
        the family's pattern."""
        if not self.has("layer_types"):
            return None
        types = self.texts("layer_types")
        if len(types) != layers:
            raise self.error("layer_types", types, f"{len(types):,} items: expected one per layer (num_hidden_layers "
                             f"= {layers:,})")
        bad = next(((i, t) for i, t in enumerate(types) if t not in allowed), None)
        if bad is not None:
            raise self.error("layer_types", types, f"item {bad[0]} is {show(bad[1])}: expected each item to be "
                             f"{' or '.join(repr(a) for a in allowed)}")
        return types

    def divides(self, key: str, value: int, whole_key: str, whole: int) -> None:
        if whole % value:
            raise ConfigError(f"{self.where}: {key} = {value:,} must divide {whole_key} = {whole:,}")

    def at_most(self, key: str, value: int, limit_key: str, limit: int) -> None:
        if value > limit:
            raise ConfigError(f"{self.where}: {key} = {value:,} is more than {limit_key} = {limit:,}")


_GELU_TANH = {"gelu_pytorch_tanh", "gelu_new", "gelu_fast", "gelu_tanh"}
ACTIVATIONS = frozenset({
    "gelu", "gelu_10", "gelu_accurate", "gelu_fast", "gelu_new", "gelu_python", "gelu_python_tanh",
    "gelu_pytorch_tanh", "hardswish", "laplace", "leaky_relu", "linear", "mish", "prelu", "quick_gelu", "relu",
    "relu2", "relu6", "sigmoid", "silu", "sqrtsoftplus", "swish", "tanh", "xielu"})
"""The activation names a config may give: transformers' ACT2CLS (transformers 5.25.0, activations.py); a model
naming another fails to build there. Compared in lower case."""


def activation(name: str | None) -> str:
    """The activation's cost name: "gelu_tanh", "gelu_erf", "silu", or the config's own name."""
    name = (name or "silu").lower()
    if name in _GELU_TANH:
        return "gelu_tanh"
    if name in ("gelu", "gelu_python"):
        return "gelu_erf"
    return "silu" if name in ("silu", "swish") else name


_DROPOUT_KEYS = ("attention_dropout", "attn_pdrop", "resid_pdrop", "embd_pdrop", "hidden_dropout",
                 "hidden_dropout_prob", "attention_probs_dropout_prob", "dropout")


def largest_dropout(c: Fields) -> float:
    """The largest dropout probability of the config (attention, residual, embedding)."""
    return max(c.probability(k) for k in _DROPOUT_KEYS)


def check_params(c: Fields, params: int) -> None:
    """Refuse a model larger than `MAX_PARAMS`, whose fields were each within their bounds."""
    if params > MAX_PARAMS:
        raise ConfigError(f"{c.where}: the config describes {params:.3g} parameters: expected at most "
                          f"{MAX_PARAMS_TEXT} (the bound on parameters)")
