"""A small ONNX graph built with onnx.helper (no torch): a two-layer MLP, batch as a symbolic dimension."""

from __future__ import annotations


def tiny_mlp_onnx(hidden: int = 64) -> bytes:
    """x[batch, 32] -> Gemm(32 -> hidden) -> Relu -> Gemm(hidden -> 10): 2·32·hidden + 2·hidden·10 FLOPs a row."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
               for name, shape in (("w1", (32, hidden)), ("b1", (hidden,)), ("w2", (hidden, 10)), ("b2", (10,)))]
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["y"])]
    graph = helper.make_graph(nodes, "tiny_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])],
                              initializer=weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
