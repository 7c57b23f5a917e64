"""Data movement: copies, concatenation, indexing, creation and embedding lookups (no FLOPs).

Gathers (embedding, index, index_select, gather) read only the rows they fetch plus the indices,
not the whole table; creation ops read nothing; `empty` writes nothing. Views are free and are
recognised by the tracer from the op's alias information, so they need no entry here.
"""

from __future__ import annotations

from sizeup.ledger import OpKind
from sizeup.ops.registry import OpCall, OpCost, io_cost, register_many

COPY_OPS = (
    "cat", "stack", "hstack", "vstack", "clone", "copy", "_to_copy", "contiguous", "constant_pad_nd",
    "reflection_pad1d", "reflection_pad2d", "reflection_pad3d", "replication_pad1d",
    "replication_pad2d", "replication_pad3d", "repeat", "repeat_interleave", "roll", "flip", "tril",
    "triu", "masked_scatter", "slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter",
    "expand_copy", "permute_copy", "view_copy", "transpose_copy", "t_copy", "unsqueeze_copy",
    "_unsafe_view_copy", "lift_fresh_copy", "channel_shuffle", "pixel_shuffle", "pixel_unshuffle",
    "im2col", "col2im", "unfold_backward", "_copy_from", "_copy_from_and_resize", "sort", "topk",
    "masked_select", "nonzero", "unique", "_unique2", "index_copy",
)
register_many([f"aten.{n}" for n in COPY_OPS], OpKind.COPY, lambda call: io_cost(call))


def gather_cost(call: OpCall) -> OpCost:
    """Reads the fetched values (the output's size) and the indices; writes the output."""
    index_bytes = sum(t.nbytes for t in call.inputs[1:] if t.dtype in ("int64", "int32", "bool", "uint8"))
    return OpCost(flops=0, bytes_read=call.output_bytes + index_bytes, bytes_written=call.output_bytes)


register_many(["aten.index", "aten.index_select", "aten.gather", "aten.take", "aten._unsafe_index"],
              OpKind.COPY, gather_cost)


def embedding_cost(call: OpCall) -> OpCost:
    """embedding(weight, indices): reads the looked-up rows and the indices, writes them out."""
    indices = call.arg(1, "indices")
    return OpCost(flops=0, bytes_read=call.output_bytes + indices.nbytes, bytes_written=call.output_bytes)


register_many(["aten.embedding", "embedding"], OpKind.EMBED, embedding_cost)


def embedding_backward_cost(call: OpCall) -> OpCost:
    """Scatter-adds grad_output rows into a zeroed [num_weights, dim] gradient: 1 FLOP per grad element."""
    grad = call.arg(0, "grad_output")
    return io_cost(call, grad.numel)


register_many(["aten.embedding_dense_backward", "aten.embedding_backward"], OpKind.EMBED, embedding_backward_cost)


def scatter_add_cost(call: OpCall) -> OpCost:
    """Accumulating scatters add 1 FLOP per source element."""
    src = call.inputs[-1]
    return io_cost(call, src.numel)


register_many(["aten.scatter_add", "aten.index_add", "aten.index_put", "aten._index_put_impl",
               "aten.scatter_reduce", "aten.index_reduce", "aten.scatter"], OpKind.COPY, scatter_add_cost)


def creation_cost(call: OpCall) -> OpCost:
    """Tensors made from nothing (zeros, full, arange, rand…): nothing read, the output written."""
    return OpCost(flops=0, bytes_read=0, bytes_written=call.output_bytes)


CREATION_OPS = (
    "zeros", "ones", "full", "arange", "linspace", "logspace", "eye", "scalar_tensor", "zeros_like",
    "ones_like", "full_like", "new_zeros", "new_ones", "new_full", "rand", "randn", "randint",
    "rand_like", "randn_like", "randint_like", "randperm", "normal", "uniform", "fill", "zero",
    "tensor",
)
register_many([f"aten.{n}" for n in CREATION_OPS], OpKind.COPY, creation_cost)


def allocation_cost(call: OpCall) -> OpCost:
    """Uninitialised allocations (empty, new_empty): no bytes move."""
    return OpCost(flops=0, bytes_read=0, bytes_written=0)


register_many(["aten.empty", "aten.empty_like", "aten.new_empty", "aten.new_empty_strided",
               "aten.empty_strided", "aten.empty_permuted", "aten.resize", "aten.set"], OpKind.COPY, allocation_cost)


def free_cost(call: OpCall) -> OpCost:
    """Ops that only reinterpret a buffer (aliasing not declared in their schema)."""
    return OpCost(flops=0, bytes_read=0, bytes_written=0)


register_many(["aten._unsafe_view", "aten.lift_fresh", "aten._reshape_alias"], OpKind.VIEW, free_cost)
