"""Op cost formulas (pure Python, no torch). The formula modules register themselves; the registry imports
them all on its first lookup, so `from sizeup.ops.attention import …` costs only that module."""

from sizeup.ops.registry import OpCall, OpCost, cost_of, lookup, op_cost, registered_names

__all__ = ["OpCall", "OpCost", "cost_of", "lookup", "op_cost", "registered_names"]
