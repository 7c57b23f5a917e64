"""The one YAML reader for what users hand sizeup (scenarios, catalog and data files, `--catalog` folders).

PyYAML reads YAML 1.1, whose implicit types surprise: `users: 1:30` is 90 (base 60), `010` is 8 (octal),
`spot: no` and a region named `NO` are booleans, `1_000` is a number, and a key given twice silently keeps
the last value. `load_yaml` reads with the YAML 1.2 core schema instead:

- integers `[-+]?[0-9]+` (decimal, leading zeros included: `010` is 10), `0o17` (octal), `0x1F` (hex);
- floats `1.5`, `-2e-3`, `.5`, `.inf`, `-.inf`, `.nan`; nothing else is a number (`1:30`, `1_000`, `0b11`
  and `1,000` are strings, which a reader expecting a number then refuses by name);
- booleans `true` / `false` only (any case the spec allows); `yes`, `no`, `on`, `off` are strings — a
  reader that expects true/false may accept them (`plan/scenario_keys.py` does);
- null `~`, `null` or nothing; dates (`retrieved: 2026-12-04`) stay YAML 1.1 timestamps, as the catalog
  reads them.

It refuses a key given twice in one mapping (naming both lines), YAML nested deeper than
`yaml_depth.MAX_YAML_NESTING` (before parsing: libyaml would overflow the C stack), recursive aliases, and
aliases that would expand the document past MAX_EXPANDED_NODES (a "billion laughs" file of a few lines).
Every refusal is one line raised as the caller's error class, naming `where` and the line.
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, SequenceNode

from sizeup.errors import ConfigError, SizeupError
from sizeup.yaml_depth import MAX_YAML_NESTING, yaml_nesting_bound

__all__ = ["StrictLoader", "load_yaml", "MAX_EXPANDED_NODES", "DuplicateKeyError"]

MAX_EXPANDED_NODES = 1_000_000
"""Nodes of the document with every alias expanded: about what a 1 MiB file holds without aliases."""

_BOOL, _INT, _FLOAT = "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_MERGE = "tag:yaml.org,2002:merge"
_DROPPED = {_BOOL, _INT, _FLOAT, "tag:yaml.org,2002:value"}
_BOOL_RE = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT_RE = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT_RE = re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                       r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")
_Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class DuplicateKeyError(ConstructorError):
    """A mapping that names one key twice."""

    def __init__(self, key: Any, first_line: int, node) -> None:
        super().__init__(None, None, f"key {_shown(key)} is given twice (first on line {first_line}); give each "
                         "key once", node.start_mark)


class _RecursiveAlias(Exception):
    """An alias inside the node it refers to."""


def _shown(key: Any) -> str:
    text = repr(key)
    return text if len(text) <= 60 else text[:40] + "…"


class StrictLoader(_Base):
    """PyYAML's safe loader (libyaml's when built) with YAML 1.2 core scalars and unique keys."""

    yaml_implicit_resolvers = {first: [(tag, rx) for tag, rx in resolvers if tag not in _DROPPED]
                               for first, resolvers in _Base.yaml_implicit_resolvers.items()}

    def construct_mapping(self, node, deep: bool = False):
        if isinstance(node, MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE:  # `<<: *base` merges; an explicit key may override a merged one
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: the base class refuses it
                    continue
                if first is not None:
                    raise DuplicateKeyError(key, first, key_node)
                seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


def _scalar(loader, node, pattern: re.Pattern[str], kind: str) -> str:
    text = loader.construct_scalar(node)
    if not pattern.match(text):
        raise ConstructorError(None, None, f"{text[:40]!r} is not a YAML 1.2 {kind}", node.start_mark)
    return text


def _construct_int(loader, node) -> int:
    text = _scalar(loader, node, _INT_RE, "integer")
    if text.startswith(("0o", "0x")):
        return int(text[2:], 8 if text[1] == "o" else 16)
    return int(text, 10)


def _construct_float(loader, node) -> float:
    text = _scalar(loader, node, _FLOAT_RE, "float")
    lower = text.lower()
    if lower.endswith(".inf"):
        return -math.inf if text.startswith("-") else math.inf
    if lower.endswith(".nan"):
        return math.nan
    return float(text)


def _construct_bool(loader, node) -> bool:
    return _scalar(loader, node, _BOOL_RE, "boolean").lower() == "true"


StrictLoader.add_implicit_resolver(_BOOL, _BOOL_RE, list("tTfF"))
StrictLoader.add_implicit_resolver(_INT, _INT_RE, list("-+0123456789"))
StrictLoader.add_implicit_resolver(_FLOAT, _FLOAT_RE, list("-+0123456789."))
StrictLoader.add_constructor(_INT, _construct_int)
StrictLoader.add_constructor(_FLOAT, _construct_float)
StrictLoader.add_constructor(_BOOL, _construct_bool)


def _expanded_nodes(root) -> int:
    """Nodes of the document with every alias expanded (each distinct node counted once per reference),
    without expanding anything: a post-order walk with one size per distinct node. _RecursiveAlias for
    an alias inside the node it names."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in _children(node))
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise _RecursiveAlias
        open_nodes.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in open_nodes:
                raise _RecursiveAlias
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _children(node) -> list:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def load_yaml(text: str, where: str, error: type[SizeupError] = ConfigError) -> Any:
    """The document in `text` (None when empty), read by StrictLoader; every problem one line raised as
    `error`, starting with `where` (a path or "scenario")."""
    depth = yaml_nesting_bound(text)
    if depth > MAX_YAML_NESTING:  # libyaml's C loader would overflow its stack (a segfault)
        raise error(f"{where}: YAML nested up to {depth:,} levels deep; expected at most {MAX_YAML_NESTING}")
    loader = StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        size = _expanded_nodes(node) if "*" in text else 0  # no '*', no alias
        if size > MAX_EXPANDED_NODES:
            raise error(f"{where}: its aliases expand to {size:,} YAML nodes; expected at most "
                        f"{MAX_EXPANDED_NODES:,} (an alias bomb?)")
        return loader.construct_document(node)
    except _RecursiveAlias:
        raise error(f"{where}: a YAML alias inside the node it names (a recursive document)") from None
    except DuplicateKeyError as e:
        raise error(f"{where}: line {e.problem_mark.line + 1}: {e.problem}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        raise error(f"{where}: not valid YAML ({line}{getattr(e, 'problem', None) or e})") from None
    except (ValueError, TypeError, OverflowError, RecursionError) as e:  # a date 2024-13-45, a 5000-digit int
        raise error(f"{where}: not valid YAML ({type(e).__name__}: {str(e)[:120]})") from None
    finally:
        loader.dispose()
