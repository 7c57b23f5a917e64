"""Trace any `nn.Module` on fake tensors into a ledger: exact per-op FLOPs and bytes, scopes from the
module tree, and tensor lifetimes for the peak live memory — with no real memory allocated.

The model is built and run under `FakeTensorMode` (tensors carry shape, dtype and device, no data);
a `TorchDispatchMode` above it sees every aten op that runs, forward and backward, and an optimizer
step written out with the same aten ops as torch's single-tensor AdamW / Adam / SGD.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensorMode,
    UnsupportedOperatorException,
)
from torch.autograd.graph import register_multi_grad_hook
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from sizeup.errors import IngestError
from sizeup.ingest.trace_inputs import InputSpec, TraceMode
from sizeup.ledger import Ledger, LiveBuffer, OpKind, OpRecord, Phase, TensorCategory, TensorRecord, TensorSpec
from sizeup.ops import OpCall, cost_of
from sizeup.ops.conv import conv_window
from sizeup.units import normalize_dtype

__all__ = ["InputSpec", "TraceMode", "trace_module"]


_TORCH_DTYPES = {
    "fp64": torch.float64, "fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16,
    "int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8,
    "uint8": torch.uint8, "bool": torch.bool,
}
_BYTES_TO_DTYPE = {1: "uint8", 2: "fp16", 4: "fp32", 8: "fp64", 16: "complex128"}


def torch_dtype(name: str) -> torch.dtype:
    key = normalize_dtype(name)
    if key not in _TORCH_DTYPES:
        raise IngestError(f"dtype {name!r} cannot be traced: expected one of {', '.join(_TORCH_DTYPES)}")
    return _TORCH_DTYPES[key]


def _dtype_name(dtype: torch.dtype) -> str:
    try:
        return normalize_dtype(str(dtype))
    except Exception:
        return _BYTES_TO_DTYPE.get(dtype.itemsize, "uint8")


def _spec(t: torch.Tensor) -> TensorSpec:
    return TensorSpec(shape=tuple(t.shape), dtype=_dtype_name(t.dtype))


def _to_specs(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return _spec(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_specs(v) for v in value) if isinstance(value, list) else tuple(_to_specs(v) for v in value)
    if isinstance(value, torch.dtype):
        return _dtype_name(value)
    if isinstance(value, (torch.device, torch.layout, torch.memory_format)):
        return str(value)
    return value


# ---- module scopes ---------------------------------------------------------------------------

class _ScopeTracker:
    """Which module is running, in forward (a stack) and in backward (gradient hooks)."""

    def __init__(self, root: torch.nn.Module) -> None:
        self._names = {id(m): name for name, m in root.named_modules()}
        self._stack: list[str] = []
        self._backward: dict[str, int] = {}
        self._counter = 0
        self._handles: list[Any] = []

    @property
    def current(self) -> str:
        if torch._C._current_graph_task_id() != -1:  # inside autograd's backward
            if not self._backward:
                return ""
            return max(self._backward, key=lambda s: (s.count(".") + bool(s), self._backward[s]))
        return self._stack[-1] if self._stack else ""

    def _enter_backward(self, name: str) -> Callable[..., None]:
        def hook(*_: Any) -> None:
            self._counter += 1
            self._backward[name] = self._counter
        return hook

    def _leave_backward(self, name: str) -> Callable[..., None]:
        def hook(*_: Any) -> None:
            self._backward.pop(name, None)
        return hook

    def _pre(self, module: torch.nn.Module, args: Any) -> None:
        name = self._names.get(id(module))
        if name is None:
            return
        self._stack.append(name)
        grads = [t for t in tree_flatten(args)[0] if isinstance(t, torch.Tensor) and t.requires_grad]
        if grads:
            self._handles.append(register_multi_grad_hook(grads, self._leave_backward(name)))

    def _post(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        name = self._names.get(id(module))
        if name is None:
            return
        if self._stack and self._stack[-1] == name:
            self._stack.pop()
        grads = [t for t in tree_flatten(output)[0] if isinstance(t, torch.Tensor) and t.requires_grad]
        if grads:
            self._handles.append(register_multi_grad_hook(grads, self._enter_backward(name)))

    def __enter__(self) -> _ScopeTracker:
        self._handles = [register_module_forward_pre_hook(self._pre), register_module_forward_hook(self._post)]
        return self

    def __exit__(self, *exc: Any) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()

    def reset_backward(self) -> None:
        self._backward.clear()


# ---- the recorder ----------------------------------------------------------------------------

class _Recorder(TorchDispatchMode):
    """Records each aten op with its cost, scope and phase, and the lifetime of every storage."""

    def __init__(self, scopes: _ScopeTracker, ledger: Ledger) -> None:
        super().__init__()
        self.scopes = scopes
        self.ledger = ledger
        self.phase = Phase.FORWARD
        self.buffers: dict[int, LiveBuffer] = {}
        self._keep: list[Any] = []  # storages kept alive so their addresses are never reused
        self.paused = False

    # storage bookkeeping
    def key(self, t: torch.Tensor) -> int:
        storage = t.untyped_storage()
        self._keep.append(storage)
        return storage._cdata

    def register(self, t: torch.Tensor, name: str, category: TensorCategory, first_use: int = 0) -> None:
        k = self.key(t)
        if k not in self.buffers:
            self.buffers[k] = LiveBuffer(name, category, t.untyped_storage().nbytes(), first_use, first_use, "")

    def touch(self, t: torch.Tensor, index: int, scope: str) -> None:
        k = self.key(t)
        buf = self.buffers.get(k)
        if buf is None:
            category = TensorCategory.ACTIVATION if self.phase == Phase.FORWARD else TensorCategory.TEMPORARY
            buf = self.buffers[k] = LiveBuffer(f"op{index}", category, t.untyped_storage().nbytes(), index, index, scope)
        buf.last_use = max(buf.last_use, index)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.paused:
            return func(*args, **kwargs)
        scope = self.scopes.current
        name = f"{func.namespace}.{func.overloadpacket.__name__}"
        try:
            out = func(*args, **kwargs)
        except (DataDependentOutputException, DynamicOutputShapeException) as e:
            raise IngestError(
                f"op {name} in module {scope or '(root)'!r} depends on tensor values, which a fake-tensor trace "
                f"does not have (e.g. .item(), nonzero, boolean masks): make it shape-only or pass sizes as ints"
            ) from e
        except UnsupportedOperatorException as e:
            raise IngestError(f"op {name} in module {scope or '(root)'!r} has no fake-tensor kernel: {e}") from e
        out_tensors = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        if not out_tensors:  # metadata queries (prim.device, sizes): nothing computed or moved
            return out
        index = len(self.ledger.ops)
        in_tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        is_view = bool(func._schema.returns) and all(
            r.alias_info is not None and not r.alias_info.is_write for r in func._schema.returns)
        for t in in_tensors:
            self.touch(t, index, scope)
        for t in out_tensors:
            self.touch(t, index, scope)
        dtype = _dtype_name(in_tensors[0].dtype) if in_tensors else (
            _dtype_name(out_tensors[0].dtype) if out_tensors else "fp32")
        if is_view:
            record = OpRecord(op=name, kind=OpKind.VIEW, scope=scope, phase=self.phase, dtype=dtype)
        else:
            call = OpCall(op=name, args=_to_specs(tuple(args)), kwargs={k: _to_specs(v) for k, v in kwargs.items()},
                          outputs=tuple(_spec(t) for t in out_tensors))
            try:
                kind, cost, counted = cost_of(call)
            except (AttributeError, IndexError, TypeError, KeyError) as e:  # a formula met an unusual signature
                raise IngestError(f"cost formula for {name} in module {scope or '(root)'!r} failed: {e}") from e
            kernel, stride = conv_window(call) if kind == OpKind.CONV else ((), ())
            record = OpRecord(op=name, kind=kind, scope=scope, phase=self.phase, flops=cost.flops,
                              matmul_flops=cost.matmul_flops, bytes_read=cost.bytes_read, bytes_written=cost.bytes_written, dtype=dtype,
                              flops_counted=counted, notes=cost.notes, conv_kernel=kernel, conv_stride=stride)
        self.ledger.add(record)
        return out


# ---- the optimizer step, written with torch's single-tensor update ops ---------------------

@torch.no_grad()
def _optimizer_step(optimizer: str, params: Sequence[torch.nn.Parameter], recorder: _Recorder) -> None:
    lr, beta1, beta2, eps, weight_decay, step = 1e-4, 0.9, 0.999, 1e-8, 0.01, 1
    for p in params:
        if p.grad is None:
            continue
        grad = p.grad
        if optimizer in ("adamw", "adam"):
            recorder.paused = True
            exp_avg = torch.zeros_like(p, memory_format=torch.preserve_format)
            exp_avg_sq = torch.zeros_like(p, memory_format=torch.preserve_format)
            recorder.paused = False
            index = len(recorder.ledger.ops)
            recorder.register(exp_avg, "exp_avg", TensorCategory.OPTIMIZER_STATE, index)
            recorder.register(exp_avg_sq, "exp_avg_sq", TensorCategory.OPTIMIZER_STATE, index)
            if optimizer == "adamw":
                p.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(p, alpha=weight_decay)
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            bias_correction1 = 1 - beta1**step
            bias_correction2_sqrt = math.sqrt(1 - beta2**step)
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            p.addcdiv_(exp_avg, denom, value=-lr / bias_correction1)
        elif optimizer == "sgd":
            recorder.paused = True
            buf = torch.zeros_like(p)
            recorder.paused = False
            recorder.register(buf, "momentum", TensorCategory.OPTIMIZER_STATE, len(recorder.ledger.ops))
            grad = grad.add(p, alpha=weight_decay)
            buf.mul_(0.9).add_(grad)
            p.add_(buf, alpha=-lr)
        else:
            raise IngestError(f"optimizer {optimizer!r} cannot be traced: expected adamw, adam or sgd")


_OPTIMIZER_STATE_NOTE = {
    "adamw": "optimizer step: torch's single-tensor AdamW update (exp_avg and exp_avg_sq per parameter)",
    "adam": "optimizer step: torch's single-tensor Adam update (exp_avg and exp_avg_sq per parameter)",
    "sgd": "optimizer step: SGD with momentum (one buffer per parameter)",
}


def _build(factory: Callable[[], Any], float_dtype: torch.dtype, fake: FakeTensorMode) -> Any:
    """Build the model on the meta device (fast: no initialisation kernels run) and give it fake
    tensors of the same shapes; a factory that fails on meta is built under fake tensors instead."""
    previous_default = torch.get_default_dtype()
    torch.set_default_dtype(float_dtype)
    try:
        try:
            with torch.device("meta"):
                model = factory()
        except IngestError:
            raise
        except Exception:
            model = None
        if isinstance(model, torch.nn.Module):
            with fake:
                _fake_tensors(model)
            return model
        with fake:
            return factory()
    except IngestError:
        raise
    except Exception as e:
        raise IngestError(f"building the model failed: {type(e).__name__}: {e}") from e
    finally:
        torch.set_default_dtype(previous_default)


def _fake_tensors(model: torch.nn.Module) -> None:
    """Replace every meta parameter, buffer and tensor attribute by a fake tensor of the same shape and
    dtype (call inside the fake mode); tied parameters stay tied."""
    made: dict[int, Any] = {}

    def fresh(t: torch.Tensor) -> torch.Tensor:
        if id(t) not in made:
            new = torch.empty(t.shape, dtype=t.dtype)
            made[id(t)] = torch.nn.Parameter(new, requires_grad=t.requires_grad) \
                if isinstance(t, torch.nn.Parameter) else new
        return made[id(t)]

    for module in model.modules():
        for key, p in module._parameters.items():
            if p is not None:
                module._parameters[key] = fresh(p)
        for key, b in module._buffers.items():
            if b is not None:
                module._buffers[key] = fresh(b)
        for key, value in list(vars(module).items()):
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
                setattr(module, key, fresh(value))


def _cast_floating(model: torch.nn.Module, dtype: torch.dtype) -> None:
    """Cast floating parameters and buffers in place of `Module.to`, which cannot swap fake tensors."""
    for module in model.modules():
        for key, p in module._parameters.items():
            if p is not None and p.is_floating_point() and p.dtype != dtype:
                module._parameters[key] = torch.nn.Parameter(p.detach().to(dtype), requires_grad=p.requires_grad)
        for key, b in module._buffers.items():
            if b is not None and b.is_floating_point() and b.dtype != dtype:
                module._buffers[key] = b.to(dtype)


# ---- entry point -----------------------------------------------------------------------------

def trace_module(
    factory: Callable[[], Any],
    inputs: Sequence[InputSpec],
    *,
    dtype: str = "fp32",
    mode: TraceMode = TraceMode.INFERENCE,
    optimizer: str = "adamw",
    name: str | None = None,
) -> Ledger:
    """Build the model from `factory` on fake tensors, run it on `inputs` and return its ledger.

    `mode` adds the backward pass (gradients of the sum of the outputs) and, for TRAIN, one
    optimizer step. Tensors live from the op that makes them to the last op that reads them.
    """
    mode = TraceMode(mode)
    float_dtype = torch_dtype(dtype)
    fake = FakeTensorMode(allow_non_fake_inputs=True)
    model = _build(factory, float_dtype, fake)
    with fake:
        if not isinstance(model, torch.nn.Module):
            raise IngestError(f"the factory returned {type(model).__name__}, expected a torch.nn.Module")
        _cast_floating(model, float_dtype)
        model.train(mode != TraceMode.INFERENCE)
        if mode == TraceMode.INFERENCE:
            model.requires_grad_(False)
        args, kwargs = [], {}
        for spec in inputs:
            t_dtype = torch_dtype(spec.dtype) if spec.dtype else float_dtype
            if any(d <= 0 for d in spec.shape):
                raise IngestError(f"input shape {'x'.join(map(str, spec.shape))}: every dimension must be positive")
            t = torch.zeros(spec.shape, dtype=t_dtype)
            if spec.name:
                kwargs[spec.name] = t
            else:
                args.append(t)

    ledger = Ledger(name=name or type(model).__name__)
    for pname, p in model.named_parameters():
        scope = pname.rpartition(".")[0]
        ledger.params_by_scope[scope] = ledger.params_by_scope.get(scope, 0) + p.numel()

    scopes = _ScopeTracker(model)
    recorder = _Recorder(scopes, ledger)
    for pname, p in model.named_parameters():
        recorder.register(p, pname, TensorCategory.PARAMETER)
    for bname, b in model.named_buffers():
        recorder.register(b, bname, TensorCategory.BUFFER)
    for i, t in enumerate([*args, *kwargs.values()]):
        recorder.register(t, f"input{i}", TensorCategory.INPUT)

    with fake, scopes, recorder:
        try:
            output = model(*args, **kwargs)
        except IngestError:
            raise
        except Exception as e:
            shapes = ", ".join("x".join(map(str, s.shape)) for s in inputs)
            raise IngestError(f"the model rejected input {shapes or '(none)'}: {type(e).__name__}: "
                              f"{str(e).splitlines()[0] if str(e) else ''}") from e
        outputs = [t for t in tree_flatten(output)[0] if isinstance(t, torch.Tensor)]
        forward_end = len(ledger.ops) - 1
        for t in outputs:
            recorder.touch(t, max(forward_end, 0), "")
        if mode != TraceMode.INFERENCE:
            grads_of = [t for t in outputs if t.requires_grad and t.is_floating_point()]
            if not grads_of:
                raise IngestError("the model's outputs do not require grad: nothing to differentiate")
            recorder.paused = True
            seeds = [torch.ones_like(t) for t in grads_of]
            recorder.paused = False
            recorder.phase = Phase.BACKWARD
            scopes.reset_backward()
            torch.autograd.backward(grads_of, seeds)
            params = [p for p in model.parameters() if p.requires_grad]
            for p in params:
                if p.grad is not None:
                    buf = recorder.buffers.get(recorder.key(p.grad))
                    if buf is not None:
                        buf.category, buf.name = TensorCategory.GRADIENT, "grad"
            if mode == TraceMode.TRAIN:
                recorder.phase = Phase.OPTIMIZER
                _optimizer_step(optimizer, params, recorder)
                ledger.assumptions.append(_OPTIMIZER_STATE_NOTE[optimizer])

    end = len(ledger.ops) - 1
    persistent = {TensorCategory.PARAMETER, TensorCategory.BUFFER, TensorCategory.GRADIENT,
                  TensorCategory.OPTIMIZER_STATE}
    for buf in recorder.buffers.values():
        last = end if buf.category in persistent else buf.last_use
        ledger.tensors.append(TensorRecord(name=buf.name, category=buf.category, nbytes=buf.nbytes,
                                           first_use=min(buf.first_use, max(last, 0)), last_use=max(last, 0),
                                           scope=buf.scope))
    ledger.assumptions.append("traced on fake tensors: exact shapes and dtypes, no values")
    ledger.assumptions.append("memory: a tensor lives from the op that writes it to the last op that reads it "
                              "(ideal allocator, no caching or fragmentation)")
    if mode != TraceMode.INFERENCE:
        ledger.assumptions.append("backward: gradients of the sum of the model's floating-point outputs")
    return ledger
