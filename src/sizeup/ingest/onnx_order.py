"""The order an ONNX graph's nodes run in: every input made before it is read, found in O(nodes + edges)."""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

from sizeup.errors import IngestError

__all__ = ["topological_order"]


def topological_order(graph: Any, available: set[str], path: Path) -> list[Any]:
    """The nodes in an order where every input is made before it is read: the file's own order when it is
    one (ONNX requires it), else Kahn's algorithm over the producer -> consumer edges, in O(nodes + edges)
    whatever the stored order (a graph stored in reverse took minutes with repeated passes)."""
    nodes = list(graph.node)
    producer: dict[str, int] = {}
    for index, node in enumerate(nodes):
        for name in node.output:
            if name and name not in available:
                if name in producer:
                    raise IngestError(f"{path.name}: tensor {name[:80]!r} is written by two nodes ("
                                      f"{_node_name(nodes[producer[name]])!r} and {_node_name(node)!r}): expected "
                                      f"each tensor made once")
                producer[name] = index
    ready = set(available) | {""}
    for node in nodes:  # the common case: the file's order is already topological
        if not all(n in ready for n in node.input):
            break
        ready.update(node.output)
    else:
        return nodes
    waiting = [0] * len(nodes)
    consumers: list[list[int]] = [[] for _ in nodes]
    for index, node in enumerate(nodes):
        for name in set(node.input):
            if name in available or name == "":
                continue
            source = producer.get(name)
            if source is None:
                raise IngestError(f"{path.name}: node {_node_name(node)!r} reads {name[:80]!r}, which no node, "
                                  f"input or initializer makes")
            waiting[index] += 1
            consumers[source].append(index)
    queue = deque(i for i, count in enumerate(waiting) if count == 0)
    ordered: list[Any] = []
    while queue:
        index = queue.popleft()
        ordered.append(nodes[index])
        for consumer in consumers[index]:
            waiting[consumer] -= 1
            if waiting[consumer] == 0:
                queue.append(consumer)
    if len(ordered) < len(nodes):
        stuck = next(node for node, count in zip(nodes, waiting) if count)
        raise IngestError(f"{path.name}: node {_node_name(stuck)!r} is on a cycle of the graph (its inputs depend on "
                          f"its own output): expected an acyclic graph")
    return ordered


def _node_name(node: Any) -> str:
    return (node.name or node.op_type)[:80]
