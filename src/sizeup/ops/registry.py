"""One registry of op cost formulas, keyed by op name ("aten.convolution", "onnx.Conv", "attention").

A formula is a pure function of an `OpCall` (tensor specs and the op's arguments) that returns an
`OpCost`: FLOPs (a fused multiply-add counts 2), bytes read, bytes written and notes. An op with no
formula is still recorded with the bytes of its inputs and outputs and listed as uncounted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from sizeup.ledger import OpKind, TensorSpec

__all__ = ["OpCall", "OpCost", "Formula", "op_cost", "lookup", "cost_of", "registered_names"]


@dataclass(frozen=True, slots=True, kw_only=True)
class OpCost:
    flops: int
    """Floating-point operations; a fused multiply-add counts as 2."""
    bytes_read: int
    bytes_written: int
    matmul_flops: int = 0
    """The part of `flops` spent in matrix products (priced on tensor cores); the rest is vector work."""
    notes: tuple[str, ...] = ()
    """Approximations the user should see, e.g. "causal mask not discounted"."""

    def __post_init__(self) -> None:
        for name in ("flops", "bytes_read", "bytes_written", "matmul_flops"):
            object.__setattr__(self, name, int(getattr(self, name)))


def _flatten(value: Any) -> Iterator[TensorSpec]:
    if isinstance(value, TensorSpec):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _flatten(v)


@dataclass(frozen=True, slots=True, kw_only=True)
class OpCall:
    """One call of an op: positional and keyword arguments (tensors as `TensorSpec`) and outputs."""

    op: str
    args: tuple = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    outputs: tuple[TensorSpec, ...] = ()

    def arg(self, index: int, name: str, default: Any = None) -> Any:
        """An argument by position, else by keyword, else `default` (aten schema order)."""
        if index < len(self.args):
            return self.args[index]
        return self.kwargs.get(name, default)

    @property
    def inputs(self) -> list[TensorSpec]:
        return [*_flatten(self.args), *_flatten(list(self.kwargs.values()))]

    @property
    def input_bytes(self) -> int:
        return sum(t.nbytes for t in self.inputs)

    @property
    def output_bytes(self) -> int:
        return sum(t.nbytes for t in self.outputs)

    @property
    def out(self) -> TensorSpec:
        return self.outputs[0]


@dataclass(frozen=True, slots=True)
class Formula:
    kind: OpKind
    fn: Callable[[OpCall], OpCost]


_REGISTRY: dict[str, Formula] = {}
_FORMULA_MODULES = ("attention", "conv", "copy", "elementwise", "matmul", "norm", "onnx_ops", "pool")
_loaded = False


def _load_formulas() -> None:
    """Import every formula module once, on the first lookup (an estimate from a config never looks one up,
    and so does not pay for the conv, pool and ONNX tables)."""
    global _loaded
    if not _loaded:
        _loaded = True
        from importlib import import_module

        for module in _FORMULA_MODULES:
            import_module(f"sizeup.ops.{module}")


def op_cost(*names: str, kind: OpKind) -> Callable[[Callable[[OpCall], OpCost]], Callable[[OpCall], OpCost]]:
    """Register `fn` as the cost formula of every name in `names`; a name registered twice raises."""

    def register(fn: Callable[[OpCall], OpCost]) -> Callable[[OpCall], OpCost]:
        for name in names:
            if name in _REGISTRY:
                raise ValueError(f"op {name!r} is already registered to {_REGISTRY[name].fn.__name__}")
            _REGISTRY[name] = Formula(kind=kind, fn=fn)
        return fn

    return register


def register_many(names: Iterable[str], kind: OpKind, fn: Callable[[OpCall], OpCost]) -> None:
    op_cost(*names, kind=kind)(fn)


def lookup(name: str) -> Formula | None:
    """The formula for `name`; in-place ("aten.add_") and out= variants fall back to the base op."""
    _load_formulas()
    formula = _REGISTRY.get(name)
    if formula is None and name.endswith("_") and not name.endswith("__"):
        formula = _REGISTRY.get(name[:-1])
    return formula


def cost_of(call: OpCall) -> tuple[OpKind, OpCost, bool]:
    """(kind, cost, flops_counted) for a call; unknown ops cost their bytes and are uncounted."""
    formula = lookup(call.op)
    if formula is None:
        return OpKind.OTHER, OpCost(flops=0, bytes_read=call.input_bytes, bytes_written=call.output_bytes), False
    return formula.kind, formula.fn(call), True


def registered_names() -> list[str]:
    _load_formulas()
    return sorted(_REGISTRY)


# ---- helpers shared by the formula modules -------------------------------------------------

def io_cost(call: OpCall, flops: int = 0, notes: tuple[str, ...] = (), matmul_flops: int = 0) -> OpCost:
    """Cost that reads every input and writes every output once."""
    return OpCost(flops=flops, bytes_read=call.input_bytes, bytes_written=call.output_bytes,
                  matmul_flops=matmul_flops, notes=notes)
