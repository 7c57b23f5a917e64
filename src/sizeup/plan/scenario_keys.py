"""Typed, strict access to one mapping of a scenario: every key checked against the schema of its task
(`scenario.KEY_TASKS`), every value against its type and bounds, every error one line naming the key path.

- A key the schema does not know is refused with the closest known key ("did you mean 'users'?").
- A known key of a section that the scenario's task does not read (`sla:` in a fine-tune, `traffic.users`
  on an edge device) is refused with the tasks that read it: nothing in a scenario is silently ignored.
- `flag` takes true/false, and yes/no/on/off (YAML 1.1 spellings, read as strings by YAML 1.2) where a
  boolean is expected.
"""

from __future__ import annotations

from collections.abc import Mapping
from difflib import get_close_matches
from typing import Any

from sizeup.errors import ConfigError
from sizeup.units import MAX_LIST_ITEMS, MAX_NAME_CHARS, check_number

__all__ = ["Keys", "MAX_TEXT_CHARS", "shown", "text_value", "type_name", "closest"]

MAX_TEXT_CHARS = 4096
"""A model path or name, a scenario name."""
_MAX_SUGGEST_CHARS = 64
"""Closest-name suggestions only for names this short (difflib is quadratic in the length)."""
_WORDS = {"yes": True, "on": True, "true": True, "no": False, "off": False, "false": False}


def type_name(value: Any) -> str:
    return {list: "a list", str: "a string", int: "a number", float: "a number", bool: "true/false"}.get(
        type(value), type(value).__name__)


def shown(value: Any) -> str:
    text = repr(value)
    size = len(value) if isinstance(value, (str, bytes, list, dict)) else len(text)
    unit = ("characters" if isinstance(value, (str, bytes)) else "entries" if isinstance(value, (list, dict))
            else "digits")
    return text if len(text) <= 60 else text[:40] + f"… ({size:,} {unit})"


def closest(name: str, choices: list[str] | tuple[str, ...] | set[str]) -> str | None:
    """The closest of `choices` to `name` (difflib ratio ≥ 0.6), or None; never for a long name."""
    if len(name) > _MAX_SUGGEST_CHARS:
        return None
    found = get_close_matches(name, sorted(choices), n=1, cutoff=0.6)
    return found[0] if found else None


def text_value(value: Any, what: str, choices: tuple[str, ...] | None, limit: int) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{what} = {shown(value)}: expected a string")
    if choices and value not in choices:
        near = closest(value, choices)
        hint = f" (did you mean {near!r}?)" if near else ""
        raise ConfigError(f"{what} = {shown(value)}: expected one of {', '.join(choices)}{hint}")
    if len(value) > limit:
        raise ConfigError(f"{what}: {len(value):,} characters; expected at most {limit:,}")
    if not value.isprintable():
        raise ConfigError(f"{what} = {shown(value)}: expected printable text (no control characters)")
    return value


class Keys:
    """Typed access to one mapping of the scenario; every error names the key path."""

    def __init__(self, data: Any, where: str) -> None:
        if data is None:
            data = {}
        if not isinstance(data, dict):
            what = f"scenario key {where!r}" if where else "scenario"
            raise ConfigError(f"{what}: expected a mapping of keys, got {type_name(data)}")
        self.data, self.where = data, where

    def path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def _key(self, key: str) -> str:
        return f"scenario key {self.path(key)!r}"

    def check(self, task: str | None, schema: Mapping[str, tuple[str, ...]], section: str | None = None) -> None:
        """Refuse a key the schema does not know (with the closest known one) or, given a `task`, one the task
        does not read. `schema` maps "section.key" (or a root key) to the tasks that read it; `section` names
        this mapping's schema entry when its path differs (a list item: constraints.owned[0] -> constraints.owned)."""
        prefix = f"{section if section is not None else self.where}."
        prefix = "" if prefix == "." else prefix
        known = {k[len(prefix):] for k in schema if k.startswith(prefix) and "." not in k[len(prefix):]}
        for raw in self.data:
            key = str(raw)
            tasks = schema.get(prefix + key) if isinstance(raw, str) else None
            if tasks is None:
                near = closest(key, known)
                name = key if len(key) <= 60 else key[:40] + "…"
                hint = f"did you mean {self.path(near)!r}? " if near else ""
                raise ConfigError(f"scenario key {self.path(name)!r} is not known ({hint}expected one of: "
                                  f"{', '.join(sorted(known))})")
            if task is not None and task not in tasks and not _empty(self.data[raw]):
                raise ConfigError(f"scenario key {self.path(key)!r} does not apply to task {task!r} (only {_listed(tasks)} "
                                  f"{'reads' if len(tasks) == 1 else 'read'} it); remove it, or change the task")

    def _numeric(self, key: str, required: bool, expected: str) -> int | float | None:
        """The raw value of `key`: None when absent (an error if `required`); a bool or a string refused."""
        value = self.data.get(key)
        if value is None:
            if required:
                raise ConfigError(f"{self._key(key)} is missing")
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{self._key(key)} = {shown(value)}: expected {expected}")
        return value

    def number(self, key: str, default: float | None = None, *, minimum: float | None = 0.0, strict: bool = False,
               maximum: float | None = None, below: float | None = None, required: bool = False) -> float | None:
        """A finite number (not a bool, not a string) within the bounds; `strict`: > minimum."""
        value = self._numeric(key, required, "a number")
        if value is None:
            return default
        return check_number(value, what=self._key(key), minimum=None if strict else minimum,
                            above=minimum if strict else None, maximum=maximum, below=below)

    def count(self, key: str, default: int | None = None, *, minimum: int = 1, maximum: int,
              required: bool = False) -> int | None:
        """A whole number within the bounds (1.0 is read as 1; 1.5 is refused)."""
        value = self._numeric(key, required, "a whole number")
        if value is None:
            return default
        return int(check_number(value, what=self._key(key), integer=True, minimum=minimum, maximum=maximum))

    def text(self, key: str, default: str | None = None, choices: tuple[str, ...] | None = None,
             limit: int = MAX_TEXT_CHARS) -> str | None:
        value = self.data.get(key, default)
        if value is None:
            return None
        return text_value(value, self._key(key), choices, limit)

    def strings(self, key: str) -> tuple[str, ...]:
        """A list of names (or one comma-separated string): duplicates dropped, at most MAX_LIST_ITEMS."""
        value = self.data.get(key)
        if value is None:
            return ()
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{self._key(key)}: expected a list of names")
        if any(not v.strip() for v in value):
            raise ConfigError(f"{self._key(key)} = {shown(value)}: a blank name; expected a list of names "
                              f"(leave the key out to allow every one)")
        names = tuple(dict.fromkeys(v.strip() for v in value))
        if len(names) > MAX_LIST_ITEMS:
            raise ConfigError(f"{self._key(key)}: {len(names):,} different names; expected at most {MAX_LIST_ITEMS}")
        for name in names:
            text_value(name, self._key(key), None, MAX_NAME_CHARS)
        return names

    def flag(self, key: str, default: bool) -> bool:
        """true or false (yes/no/on/off accepted here, where a boolean is expected)."""
        value = self.data.get(key, default)
        if isinstance(value, str) and value.strip().lower() in _WORDS:
            return _WORDS[value.strip().lower()]
        if not isinstance(value, bool):
            raise ConfigError(f"{self._key(key)} = {shown(value)}: expected true or false")
        return value

    def sub(self, key: str) -> Keys:
        return Keys(self.data.get(key), self.path(key))


def _listed(tasks: tuple[str, ...]) -> str:
    return tasks[0] if len(tasks) == 1 else f"{', '.join(tasks[:-1])} and {tasks[-1]}"


def _empty(value: Any) -> bool:
    """Nothing said: a key with no value, or an empty mapping or list."""
    return value is None or (isinstance(value, (dict, list)) and not value)
