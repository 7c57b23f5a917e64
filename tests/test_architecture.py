"""The house rules of docs/ARCHITECTURE.md, checked on the code: no import circles, no upward arrows
from the core into the extras, and files that stay small enough to read."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "sizeup"

# Files allowed past 500 lines because each is one cohesive table or formula set (say why).
LONG_FILES_ALLOWED: dict[str, str] = {}
MAX_LINES = 500


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The sizeup modules `path` imports anywhere in its body (lazy imports count: a circle is a circle)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # `from pkg import sub` names a submodule when one exists, else a name in pkg
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target.startswith("sizeup"):
                found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    graph = {name: _imports(name, path, known) for name, path in modules.items()}
    for name in graph:  # a package's face only hands names on; importing it is not importing its parent
        graph[name].discard("sizeup")
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_planted_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_between_sizeup_modules():
    cycles = _cycles(_graph())
    assert not cycles, "import circles: " + "; ".join(" <-> ".join(c) for c in cycles)


# Layers of the core, lowest first: a module may import its own layer and those below, never above.
LAYERS = [
    ("sizeup.errors", "sizeup.units", "sizeup.ranges", "sizeup.formats", "sizeup.yaml_depth", "sizeup.files",
     "sizeup.yaml_strict", "sizeup.escape", "sizeup.sources", "sizeup.dataclass_code"),
    ("sizeup.ledger", "sizeup.hardware", "sizeup.store"),
    ("sizeup.ops",),
    ("sizeup.ingest",),
    ("sizeup.engines",),
    ("sizeup.price",),
    ("sizeup.workload",),
]


def _layer(module: str) -> int | None:
    for level, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return level
    return None


def test_no_arrow_runs_back_up_from_the_core():
    upward = []
    for module, targets in _graph().items():
        level = _layer(module)
        if level is None:
            continue
        for target in targets:
            target_level = _layer(target)
            if target_level is not None and target_level > level:
                upward.append(f"{module} -> {target}")
            elif target_level is None and target.split(".")[1] in {"plan", "report", "cli", "api", "measure", "ui"}:
                upward.append(f"{module} -> {target}")
    assert not upward, "imports that run back up: " + ", ".join(sorted(upward))


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_file_is_under_the_line_limit(path: Path):
    rel = str(path.relative_to(SRC))
    lines = len(path.read_text(encoding="utf-8").splitlines())
    if rel in LONG_FILES_ALLOWED:
        return
    assert lines <= MAX_LINES, f"{rel} has {lines} lines (limit {MAX_LINES}): split it along its seams"
