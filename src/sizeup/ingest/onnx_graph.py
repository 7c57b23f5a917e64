"""Read an ONNX model into a ledger: shapes from ONNX shape inference, costs from the "onnx.<OpType>"
formulas of `sizeup.ops.onnx_ops`, scopes from the exporter's module paths.

Symbolic input dimensions ("batch") are bound from `dims` before shape inference, so every tensor has
a static shape. Nodes computed only from constants and static shapes (Shape → Gather → Concat chains,
a causal mask built from the sequence length) are what a runtime folds at load time: they are recorded
as free views, as a traced model does such arithmetic in Python. Scopes come from the node names of
torch's TorchScript exporter ("/m.0/cv1/conv/Conv" → "m.0.cv1.conv") or from the name-scope metadata
of its dynamo exporter, so per-module aggregation matches a trace of the same model.
"""

from __future__ import annotations

import ast
import copy
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

import sizeup.ops.onnx_ops  # noqa: F401  (registers the "onnx.*" formulas)
from sizeup.errors import IngestError
from sizeup.ingest.limits import MAX_PARAMS, MAX_PARAMS_TEXT
from sizeup.ingest.onnx_order import topological_order
from sizeup.ingest.onnx_weights import check_initializers
from sizeup.ledger import Ledger, LiveBuffer, OpKind, OpRecord, TensorCategory, TensorRecord, TensorSpec
from sizeup.ops import OpCall, cost_of
from sizeup.units import FLOAT_DTYPES

__all__ = ["onnx_ledger"]

_MISSING_ONNX = "reading .onnx files needs the onnx package: pip install 'sizeup[onnx]'"

# ONNX TensorProto element types -> sizeup dtype names (unsigned types by their width)
_ELEMENT_TYPES: dict[int, str] = {
    1: "fp32", 2: "uint8", 3: "int8", 4: "int16", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
    10: "fp16", 11: "fp64", 12: "int32", 13: "int64", 14: "complex64", 15: "complex128", 16: "bf16",
    17: "fp8", 18: "fp8", 19: "fp8", 20: "fp8", 21: "int4", 22: "int4", 23: "fp4",
}
_RANDOM_OPS = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                         "Multinomial", "Bernoulli"})
# inputs that hold statistics or quantisation constants rather than learned weights
_NOT_PARAMETERS = {"BatchNormalization": {3, 4}, "QuantizeLinear": {1, 2}, "DequantizeLinear": {1, 2},
                   "Resize": {1, 2, 3}, "Upsample": {1}}
_PARAMETER_DTYPES = FLOAT_DTYPES | {"int8", "uint8", "int4"}
_NAME_SCOPES_KEY = "pkg.torch.onnx.name_scopes"
_FOLD_LIMIT = 1 << 16
"""Largest tensor (elements) evaluated while folding: shape arithmetic, never activations or weights."""
_GENERATORS = frozenset({"Expand", "ConstantOfShape", "Range", "Tile", "EyeLike", "Resize", "Upsample", "Pad"})
"""Ops whose output size follows from input values: folded only when their output is known to be small."""
_MAX_ROUNDS = 64
MAX_ONNX_BYTES = 2**31
"""Largest .onnx file read (protobuf's 2 GiB message limit: larger models keep their weights in external data)."""
_SUBGRAPH_ATTRIBUTES = (5, 10)  # AttributeProto.GRAPH, GRAPHS: the bodies of If, Loop, Scan


# ---- reading and shapes ----------------------------------------------------------------------

def _import_onnx() -> Any:
    try:
        import onnx
        import onnx.numpy_helper
        import onnx.reference
        import onnx.shape_inference
    except ImportError as e:
        raise IngestError(_MISSING_ONNX) from e
    return onnx


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0]}" if text else type(e).__name__


def _load(onnx: Any, path: Path) -> Any:
    from sizeup.files import read_regular

    raw = read_regular(path, what="ONNX file", error=IngestError, limit=MAX_ONNX_BYTES)
    try:
        model = onnx.load_model_from_string(raw)  # external weights are not loaded: their sizes suffice
    except Exception as e:  # protobuf's DecodeError, or whatever onnx raises on a damaged file
        raise IngestError(f"{path.name} is not a readable ONNX model ({_first_line(e)})") from e
    del raw
    if not model.HasField("graph") or not model.graph.node:
        raise IngestError(f"{path.name} is not a readable ONNX model (no graph nodes)")
    check_initializers(model, path)
    weights = {w.name for w in model.graph.initializer}
    for value in model.graph.input:
        _check_declared_dims(value, path, 0 if value.name in weights else 1)
    for value in [*model.graph.output, *model.graph.value_info]:
        _check_declared_dims(value, path, 0)
    return model


def _check_declared_dims(value: Any, path: Path, least: int) -> None:
    """A declared tensor shape holds sizes of at least `least` (1 for a graph input: an empty input computes
    nothing to time); a dynamic size is a named or unnamed dim_param."""
    if not value.type.HasField("tensor_type"):
        return
    for axis, d in enumerate(value.type.tensor_type.shape.dim):
        if d.HasField("dim_value") and d.dim_value < least:
            raise IngestError(f"{path.name}: tensor {value.name!r} has size {d.dim_value} on axis {axis}: expected a "
                              f"size of at least {least}, or a named dimension for a dynamic one")


def batch_dim(path: str | Path) -> str | None:
    """The symbolic leading dimension of the graph's first (non-weight) input, taken as its batch."""
    path = Path(path)
    model = _load(_import_onnx(), path)
    weights = {i.name for i in model.graph.initializer}
    for value in model.graph.input:
        if value.name in weights or not value.type.HasField("tensor_type"):
            continue
        shape = value.type.tensor_type.shape.dim
        return shape[0].dim_param or None if len(shape) else None
    return None


def _bind_dims(model: Any, dims: Mapping[str, int], path: Path) -> None:
    """Replace every symbolic dimension named in `dims`; any other symbolic input dimension raises."""
    for key, size in dims.items():
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise IngestError(f"dimension {key!r}={size!r}: expected a positive integer")
    graph = model.graph
    weights = {i.name for i in graph.initializer}
    unbound: list[str] = []
    seen: set[str] = set()
    for value in graph.input:
        if value.name in weights or not value.type.HasField("tensor_type"):
            continue
        for axis, d in enumerate(value.type.tensor_type.shape.dim):
            if d.HasField("dim_value"):
                continue
            if not d.dim_param:
                raise IngestError(f"input {value.name!r} of {path.name} has an unnamed dynamic dimension "
                                  f"(axis {axis}), which dims cannot bind")
            seen.add(d.dim_param)
            if d.dim_param in dims:
                d.dim_value = dims[d.dim_param]
            else:
                unbound.append(f"{d.dim_param!r} (input {value.name!r}, axis {axis})")
    if unbound:
        raise IngestError(f"{path.name}: unbound symbolic dimension {', '.join(unbound)}: pass its size "
                          f"(--dim {unbound[0].split()[0].strip(chr(39))}=1 on the command line, "
                          f"dims={{{unbound[0].split()[0]}: 1}} in Python)")
    unknown = sorted(set(dims) - seen)
    if unknown:
        raise IngestError(f"dims {', '.join(map(repr, unknown))} name no symbolic input dimension of {path.name} "
                          f"(it has: {', '.join(map(repr, sorted(seen))) or 'none'})")
    for value in [*graph.output, *graph.value_info]:
        if value.type.HasField("tensor_type"):
            for d in value.type.tensor_type.shape.dim:
                if d.HasField("dim_param") and d.dim_param in dims:
                    d.dim_value = dims[d.dim_param]


def _infer_shapes(onnx: Any, model: Any, path: Path) -> Any:
    try:
        return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    except Exception as e:  # InferenceError, or a checker error on an invalid graph
        raise IngestError(f"shape inference failed on {path.name}: {_first_line(e)}") from e


def _spec(tensor_type: Any) -> TensorSpec | None:
    """A TensorSpec for a fully known tensor type, else None (unknown rank, dimension or dtype)."""
    if not tensor_type.HasField("tensor_type"):
        return None
    t = tensor_type.tensor_type
    dtype = _ELEMENT_TYPES.get(t.elem_type)
    if dtype is None or not t.HasField("shape") or not all(d.HasField("dim_value") for d in t.shape.dim):
        return None
    return TensorSpec(shape=tuple(d.dim_value for d in t.shape.dim), dtype=dtype)


def _spec_of_weight(w: Any) -> TensorSpec | None:
    dtype = _ELEMENT_TYPES.get(w.data_type)
    return TensorSpec(shape=tuple(w.dims), dtype=dtype) if dtype else None


def _specs(graph: Any, path: Path) -> dict[str, TensorSpec | None]:
    """Every tensor's type as shape inference left it; a tensor past MAX_PARAMS elements is refused (no graph
    computes one; its FLOPs and bytes would be figures no device has)."""
    specs: dict[str, TensorSpec | None] = {}
    for value in [*graph.input, *graph.value_info, *graph.output]:
        spec = _spec(value.type)
        if spec is not None and any(d < 0 for d in spec.shape):
            spec = None
        elif spec is not None and math.prod(spec.shape) > MAX_PARAMS:
            raise IngestError(f"{path.name}: tensor {value.name!r} of shape {list(spec.shape)[:8]} has more than "
                              f"{MAX_PARAMS_TEXT} elements (the bound on one tensor): expected a plausible graph and "
                              f"--dim sizes")
        specs[value.name] = spec
    for w in graph.initializer:
        specs[w.name] = _spec_of_weight(w)
    return specs


def _strip_weights(onnx: Any, model: Any) -> None:
    """Turn initializers over the fold limit into typed graph inputs, so the copies made for shape
    inference carry no weight data (their shapes are all inference needs)."""
    graph = model.graph
    declared = {v.name for v in graph.input}
    big = [w for w in graph.initializer if math.prod(w.dims) > _FOLD_LIMIT]
    for w in big:
        if w.name not in declared:
            graph.input.append(onnx.helper.make_tensor_value_info(w.name, w.data_type, list(w.dims)))
    small = [w for w in graph.initializer if math.prod(w.dims) <= _FOLD_LIMIT]
    kept = [onnx.TensorProto() for _ in small]
    for clone, w in zip(kept, small):
        clone.CopyFrom(w)
    del graph.initializer[:]
    graph.initializer.extend(kept)


def _with_folded(onnx: Any, model: Any, values: Mapping[str, np.ndarray]) -> Any:
    """A copy of `model` in which the folded values are initializers instead of node outputs."""
    clone = onnx.ModelProto()
    clone.CopyFrom(model)
    if values:
        kept = [n for n in clone.graph.node if not all(o in values for o in n.output if o)]
        del clone.graph.node[:]
        clone.graph.node.extend(kept)
        clone.graph.initializer.extend(onnx.numpy_helper.from_array(v, name=k) for k, v in values.items())
        if clone.ir_version < 4:  # initializers must also be declared as inputs
            clone.graph.input.extend(
                onnx.helper.make_tensor_value_info(k, onnx.helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
                for k, v in values.items())
    return clone


def _is_static(node: Any, static: set[str], specs: Mapping[str, TensorSpec | None]) -> bool:
    """Computable before any input data arrives: from constants, initializers and static shapes."""
    if node.domain not in ("", "ai.onnx") or node.op_type in _RANDOM_OPS:
        return False
    if _has_subgraph(node):
        return False
    if node.op_type in ("Shape", "Size"):
        return specs.get(node.input[0]) is not None
    return all(n == "" or n in static for n in node.input)


def _has_subgraph(node: Any) -> bool:
    return any(a.type in _SUBGRAPH_ATTRIBUTES for a in node.attribute)


def _fold(onnx: Any, nodes: list[Any], weights: Mapping[str, Any], specs: Mapping[str, TensorSpec | None],
          values: dict[str, np.ndarray], opsets: Mapping[str, int]) -> int:
    """Evaluate, with ONNX's reference implementation, the small static nodes whose values are not yet
    known (shape inference cannot follow arithmetic such as Div on shapes); returns how many it added."""
    static = set(weights)
    added = 0
    for node in nodes:
        if not _is_static(node, static, specs):
            continue
        static.update(node.output)
        outputs = [o for o in node.output if o]
        if all(o in values for o in outputs):
            continue
        if node.op_type in ("Shape", "Size"):
            shape = specs[node.input[0]].shape
            attrs = {a.name: a.i for a in node.attribute}
            result = [np.array(shape[attrs.get("start", 0):attrs.get("end")] if node.op_type == "Shape"
                               else math.prod(shape), dtype=np.int64)]
        else:
            feeds = {n: values[n] if n in values else _array(onnx, weights.get(n)) for n in node.input if n}
            out_specs = [specs.get(o) for o in outputs]
            if (any(v is None or v.size > _FOLD_LIMIT for v in feeds.values())
                    or any(t is not None and t.numel > _FOLD_LIMIT for t in out_specs)
                    or (node.op_type in _GENERATORS and any(t is None for t in out_specs))):
                continue
            try:
                result = onnx.reference.ReferenceEvaluator(node, opsets=dict(opsets)).run(None, feeds)
            except Exception:  # noqa: BLE001  an op the reference runtime lacks: its shapes stay unknown
                continue
        for name, value in zip(node.output, result):
            value = np.asarray(value)
            if name and value.size <= _FOLD_LIMIT:
                values[name] = value
                added += 1
    return added


def _array(onnx: Any, weight: Any) -> np.ndarray | None:
    if weight is None or math.prod(weight.dims) > _FOLD_LIMIT:
        return None
    try:
        return onnx.numpy_helper.to_array(weight)
    except (ValueError, TypeError, OSError):  # external data not loaded
        return None


# ---- the graph -------------------------------------------------------------------------------

def _scope(node: Any) -> str:
    """Module path of a node: the dynamo exporter's name scopes, else the TorchScript exporter's node
    name, whose parts name each module relative to its parent, "/layer1/layer1.0/downsample/
    downsample.0/Conv" → "layer1.0.downsample.0" (a part "a.0" after "a" replaces it)."""
    for prop in node.metadata_props:
        if prop.key == _NAME_SCOPES_KEY:
            try:
                parts = ast.literal_eval(prop.value)
            except (ValueError, SyntaxError):
                break
            return str(parts[-2]) if isinstance(parts, list) and len(parts) >= 2 else ""
    if not node.name.startswith("/"):
        return ""
    modules: list[str] = []
    for part in node.name.split("/")[1:-1]:
        if modules and part.startswith(modules[-1] + "."):
            modules[-1] = part
        else:
            modules.append(part)
    return ".".join(modules)


def _attributes(onnx: Any, node: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for a in node.attribute:
        if a.type in (onnx.AttributeProto.TENSOR, onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS,
                      onnx.AttributeProto.SPARSE_TENSOR, onnx.AttributeProto.TENSORS):
            continue
        value = onnx.helper.get_attribute_value(a)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        elif isinstance(value, list):
            value = tuple(v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value)
        out[a.name] = value
    return out


def _op_name(node: Any) -> str:
    if node.domain in ("", "ai.onnx"):
        return f"onnx.{node.op_type}"
    return f"onnx.{node.domain}.{node.op_type}"


def _compute_dtype(inputs: list[TensorSpec | None], outputs: list[TensorSpec | None]) -> str:
    known = [t for t in inputs if t is not None]
    floating = [t for t in known if t.dtype in FLOAT_DTYPES]
    first = (floating or known or [t for t in outputs if t is not None] or [TensorSpec(shape=())])[0]
    return first.dtype


# ---- entry point -----------------------------------------------------------------------------

def onnx_ledger(path: str | Path, *, dims: dict[str, int] | None = None, name: str | None = None) -> Ledger:
    """Read the ONNX model at `path` into a ledger of costed ops (inference, forward only).

    `dims` binds the symbolic input dimensions, e.g. {"batch": 8}; every symbolic input dimension must
    be bound. Initializers count as bytes read by the ops that use them, and as parameters of the
    scope of the first node that uses them.
    """
    onnx = _import_onnx()
    path = Path(path)
    dims = dict(dims or {})
    model = _load(onnx, path)
    _bind_dims(model, dims, path)
    weight_specs = {w.name: _spec_of_weight(w) for w in model.graph.initializer}
    inputs = [v.name for v in model.graph.input if v.name not in weight_specs]
    ordered = [copy.deepcopy(n) for n in topological_order(model.graph, set(weight_specs) | set(inputs), path)]
    del model.graph.node[:]
    model.graph.node.extend(ordered)  # shape inference too reads the nodes in order
    nodes = list(model.graph.node)
    _strip_weights(onnx, model)
    small_weights = {w.name: w for w in model.graph.initializer}
    opsets = {o.domain or "": o.version for o in model.opset_import}
    values: dict[str, np.ndarray] = {}
    for _ in range(_MAX_ROUNDS):  # shape inference, then fold what it could not follow, until nothing changes
        specs = _specs(_infer_shapes(onnx, _with_folded(onnx, model, values), path).graph, path)
        specs.update(weight_specs)
        if not _fold(onnx, nodes, small_weights, specs, values, opsets):
            break
    scalars = {n: v.reshape(-1)[0].item() for n, v in values.items() if v.size == 1}
    scalars.update((n, a.reshape(-1)[0].item()) for n, w in small_weights.items()
                   if math.prod(w.dims) == 1 and (a := _array(onnx, w)) is not None)

    ledger = Ledger(name=name or path.stem)
    static: set[str] = set(weight_specs)
    folded = unknown_shape = 0
    buffers: dict[str, LiveBuffer] = {}
    alias: dict[str, str] = {}
    consumers: dict[str, list[tuple[str, str, int]]] = {}  # initializer -> (scope, op type, input slot)
    for n in inputs:
        buffers[n] = LiveBuffer(n, TensorCategory.INPUT, _nbytes(specs.get(n)), 0, 0, "")

    for index, node in enumerate(nodes):
        op, scope = _op_name(node), _scope(node)
        in_specs = [None if n == "" else specs.get(n) for n in node.input]
        out_specs = [specs.get(n) for n in node.output if n]
        dtype = _compute_dtype(in_specs, out_specs)
        has_subgraph = _has_subgraph(node)
        for slot, n in enumerate(node.input):
            if n in weight_specs:
                consumers.setdefault(n, []).append((scope, node.op_type, slot))
        is_static = _is_static(node, static, specs)
        unknown = [n for n in (*node.input, *node.output) if n and specs.get(n) is None]
        if is_static:
            static.update(node.output)
            folded += 1
            record = OpRecord(op=op, kind=OpKind.VIEW, scope=scope, dtype=dtype)
        elif unknown:
            unknown_shape += 1
            known_in = sum(t.nbytes for t in in_specs if t is not None)
            known_out = sum(t.nbytes for t in out_specs if t is not None)
            record = OpRecord(op=op, kind=OpKind.OTHER, scope=scope, bytes_read=known_in, bytes_written=known_out,
                              dtype=dtype, flops_counted=False,
                              notes=(f"shape of {unknown[0]!r} unknown after shape inference: FLOPs not counted",))
        else:
            kwargs = _attributes(onnx, node)
            kwargs["input_values"] = tuple(scalars.get(n) for n in node.input)
            call = OpCall(op=op, args=tuple(in_specs), kwargs=kwargs, outputs=tuple(out_specs))
            try:
                kind, cost, counted = cost_of(call)
            except (AttributeError, IndexError, TypeError, KeyError, ValueError, ZeroDivisionError) as e:
                raise IngestError(f"{path.name}: cost formula for {op} (node {node.name!r}) failed: "
                                  f"{_first_line(e)}") from e
            notes = cost.notes + (("control flow: the body subgraph is not costed",) if has_subgraph else ())
            record = OpRecord(op=op, kind=kind, scope=scope, flops=cost.flops, matmul_flops=cost.matmul_flops,
                              bytes_read=cost.bytes_read, bytes_written=cost.bytes_written, dtype=dtype,
                              flops_counted=counted, notes=notes)
        ledger.add(record)
        _track(node, index, record, scope, is_static, specs, buffers, alias)

    _add_tensors(ledger, model.graph, weight_specs, specs, buffers, alias, consumers)
    ledger.assumptions.append(
        f"read from the ONNX file {path.name} (opset {_opset(model)}); shapes from ONNX shape inference"
        + (f" with {', '.join(f'{k}={v}' for k, v in dims.items())}" if dims else ""))
    if folded:
        ledger.assumptions.append(f"{folded} nodes computed only from constants and static shapes are folded "
                                  f"at load time and cost nothing")
    if unknown_shape:
        ledger.assumptions.append(f"{unknown_shape} nodes have shapes that shape inference could not determine: "
                                  f"only the bytes of their known tensors are counted")
    ledger.assumptions.append("memory: a tensor lives from the op that writes it to the last op that reads it "
                              "(ideal allocator, no caching or fragmentation)")
    return ledger


def _nbytes(spec: TensorSpec | None) -> int:
    return spec.nbytes if spec is not None else 0


def _opset(model: Any) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def _track(node: Any, index: int, record: OpRecord, scope: str, is_static: bool,
           specs: Mapping[str, TensorSpec | None], buffers: dict[str, LiveBuffer], alias: dict[str, str]) -> None:
    """Extend the lifetimes of the buffers a node reads and start those it writes; a view's output
    shares its input's buffer."""
    for n in node.input:
        buf = buffers.get(alias.get(n, n))
        if buf is not None:
            buf.last_use = max(buf.last_use, index)
    data_input = next((n for n in node.input if n), None)
    for n in node.output:
        if not n:
            continue
        if record.kind == OpKind.VIEW and not is_static and data_input is not None:
            alias[n] = alias.get(data_input, data_input)
            continue
        category = TensorCategory.BUFFER if is_static else TensorCategory.ACTIVATION
        buffers[n] = LiveBuffer(n, category, _nbytes(specs.get(n)), index, index, scope)


def _add_tensors(ledger: Ledger, graph: Any, weights: Mapping[str, TensorSpec | None],
                 specs: Mapping[str, TensorSpec | None], buffers: dict[str, LiveBuffer], alias: Mapping[str, str],
                 consumers: Mapping[str, list[tuple[str, str, int]]]) -> None:
    """Parameters per scope and the ledger's tensor records (initializers and constants live throughout)."""
    end = max(len(ledger.ops) - 1, 0)
    for name in weights:
        uses = consumers.get(name, [])
        spec = specs.get(name)
        is_parameter = (spec is not None and spec.numel > 1 and spec.dtype in _PARAMETER_DTYPES
                        and any(slot not in _NOT_PARAMETERS.get(op_type, ()) for _, op_type, slot in uses))
        scope = next((s for s, _, _ in uses if s), uses[0][0] if uses else "")
        if is_parameter:
            ledger.params_by_scope[scope] = ledger.params_by_scope.get(scope, 0) + spec.numel
        category = TensorCategory.PARAMETER if is_parameter else TensorCategory.BUFFER
        ledger.tensors.append(TensorRecord(name=name, category=category, nbytes=_nbytes(spec), first_use=0,
                                           last_use=end, scope=scope))
    for value in graph.output:
        buf = buffers.get(alias.get(value.name, value.name))
        if buf is not None:
            buf.last_use = end
    for buf in buffers.values():
        last = end if buf.category == TensorCategory.BUFFER else buf.last_use
        ledger.tensors.append(TensorRecord(name=buf.name, category=buf.category, nbytes=buf.nbytes,
                                           first_use=min(buf.first_use, last), last_use=last, scope=buf.scope))
