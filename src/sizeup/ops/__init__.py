"""Op cost formulas. Importing this package registers every formula (pure Python, no torch)."""

from sizeup.ops import attention, conv, copy, elementwise, matmul, norm, onnx_ops, pool  # noqa: F401  (registers)
from sizeup.ops.registry import OpCall, OpCost, cost_of, lookup, op_cost, registered_names

__all__ = ["OpCall", "OpCost", "cost_of", "lookup", "op_cost", "registered_names"]
