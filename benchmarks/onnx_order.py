"""Time to order the nodes of an ONNX graph stored in reverse (issue 27: 12,000 reverse-ordered nodes took
54 s with repeated passes; the order must now take time linear in nodes + edges).

Builds, for each size, a graph of N nodes whose file order is the reverse of the order they run in: a chain
of Relu nodes with, every 8th node, an Add that also reads the output 8 nodes back (so nodes have one or two
inputs and the edges are ~1.1 N). Times `sizeup.ingest.onnx_order.topological_order` on it (CPU time, the best
of 3 runs) and, for the same graph in file order, the fast path that only checks the order. One table: nodes, edges,
seconds reversed, microseconds per node reversed, seconds in order. With `--ledger`, also the whole
`onnx_ledger` (shape inference and costing included) for sizes up to 10,000 nodes.

Run from the repo root: python benchmarks/onnx_order.py [--ledger] [N ...]   (default N: 1000 10000 100000)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

SIZES = (1_000, 10_000, 100_000)
SKIP = 8
"""Every SKIP-th node is an Add that also reads the output SKIP nodes back."""


def graph(n: int, reverse: bool):
    """A model of `n` nodes running x -> t1 -> ... -> tn = y, stored reversed when `reverse`."""
    from onnx import TensorProto, helper

    nodes, edges = [], 0
    for i in range(1, n + 1):
        prev, out = "x" if i == 1 else f"t{i - 1}", "y" if i == n else f"t{i}"
        if i % SKIP == 0 and i > SKIP:
            nodes.append(helper.make_node("Add", [prev, f"t{i - SKIP}"], [out], name=f"n{i}"))
            edges += 2
        else:
            nodes.append(helper.make_node("Relu", [prev], [out], name=f"n{i}"))
            edges += 1
    if reverse:
        nodes.reverse()
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), edges


def time_order(model, repeats: int = 3) -> float:
    from sizeup.ingest.onnx_order import topological_order

    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()  # CPU time: other processes on a shared machine do not count
        ordered = topological_order(model.graph, {"x"}, Path("bench.onnx"))
        best = min(best, time.process_time() - start)
    assert len(ordered) == len(model.graph.node)
    return best


def time_ledger(model) -> float:
    from sizeup.ingest.onnx_graph import onnx_ledger

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "chain.onnx"
        path.write_bytes(model.SerializeToString())
        start = time.perf_counter()
        onnx_ledger(path)
        return time.perf_counter() - start


def main(argv: list[str]) -> None:
    ledger = "--ledger" in argv
    sizes = [int(a) for a in argv if not a.startswith("--")] or list(SIZES)
    print(f"| nodes | edges | order, reversed (s) | per node (µs) | order, file order (s) |"
          f"{' whole onnx_ledger, reversed (s) |' if ledger else ''}")
    print(f"|---:|---:|---:|---:|---:|{'---:|' if ledger else ''}")
    for n in sizes:
        reversed_model, edges = graph(n, reverse=True)
        in_order, _ = graph(n, reverse=False)
        backwards, forwards = time_order(reversed_model), time_order(in_order)
        whole = f" {time_ledger(reversed_model):.2f} |" if ledger and n <= 10_000 else (" — |" if ledger else "")
        print(f"| {n:,} | {edges:,} | {backwards:.4f} | {backwards / n * 1e6:.2f} | {forwards:.4f} |{whole}")


if __name__ == "__main__":
    main(sys.argv[1:])
