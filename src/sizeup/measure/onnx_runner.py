"""Measure an ONNX file through ONNX Runtime: the same timing policy and per-point records as a torch
model, with the graph's symbolic batch dimension set to each batch size of the sweep.

The batch dimension is the symbolic leading dimension of the first graph input; every other symbolic
dimension must be bound with `--dim NAME=SIZE`. Inputs are random: normal floats, integer ids below 100.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sizeup.errors import MeasureError
from sizeup.measure.harness import PointResult, TimingPolicy, _point

__all__ = ["OnnxModel", "load_onnx", "measure_onnx"]

_NUMPY_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
                "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8,
                "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_}


@dataclass(frozen=True, slots=True)
class OnnxModel:
    path: Path
    session: Any
    batch_dim: str | None
    """Name of the symbolic leading dimension of the first input; None when the batch is fixed."""
    fixed_batch: int | None
    dims: Mapping[str, int]
    provider: str

    def dims_at(self, batch: int) -> dict[str, int]:
        """Every symbolic dimension bound, the batch one to `batch`."""
        return {**self.dims, self.batch_dim: batch} if self.batch_dim else dict(self.dims)


def load_onnx(path: str | Path, device: str = "cpu", dims: Mapping[str, int] | None = None) -> OnnxModel:
    """An ONNX Runtime session on the device (the CUDA execution provider for cuda devices)."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise MeasureError("measuring an ONNX file needs onnxruntime: pip install 'sizeup[onnx]'") from None
    path = Path(path)
    if not path.is_file():
        raise MeasureError(f"no such ONNX file: {str(path)!r}")
    if device.startswith("cuda"):
        if "CUDAExecutionProvider" not in ort.get_available_providers():
            raise MeasureError(f"device {device!r}: this onnxruntime has no CUDA execution provider "
                               "(install onnxruntime-gpu)")
        index = int(device.partition(":")[2] or 0)
        providers: list[Any] = [("CUDAExecutionProvider", {"device_id": index})]
    elif device == "cpu":
        providers = ["CPUExecutionProvider"]
    else:
        raise MeasureError(f"device {device!r}: ONNX files are measured on cpu or cuda[:N]")
    try:
        session = ort.InferenceSession(str(path), providers=providers)
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise MeasureError(f"{path.name}: ONNX Runtime could not load it: {first}") from None
    inputs = session.get_inputs()
    if not inputs:
        raise MeasureError(f"{path.name}: the graph has no inputs to feed")
    lead = inputs[0].shape[0] if inputs[0].shape else None
    batch_dim = lead if isinstance(lead, str) else None
    fixed = lead if isinstance(lead, int) else None
    dims = dict(dims or {})
    for i in inputs:
        for axis, d in enumerate(i.shape):
            if (isinstance(d, str) or d is None) and d != batch_dim and d not in dims:
                raise MeasureError(f"{path.name}: input {i.name!r} axis {axis} has the unbound size {d!r}: "
                                   f"give it with --dim {d or 'NAME'}=SIZE")
        if i.type not in _NUMPY_TYPES:
            raise MeasureError(f"{path.name}: input {i.name!r} has type {i.type}, which sizeup cannot fill")
    return OnnxModel(path=path, session=session, batch_dim=batch_dim, fixed_batch=fixed, dims=dims,
                     provider=session.get_providers()[0])


def _feeds(model: OnnxModel, batch: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    sizes = model.dims_at(batch)
    feeds = {}
    for i in model.session.get_inputs():
        shape = tuple(sizes[d] if isinstance(d, str) else d for d in i.shape)
        dtype = _NUMPY_TYPES[i.type]
        if np.issubdtype(dtype, np.floating):
            feeds[i.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype is np.bool_:
            feeds[i.name] = np.ones(shape, dtype=dtype)
        else:
            feeds[i.name] = rng.integers(0, 100, size=shape).astype(dtype)
    return feeds


def measure_onnx(model: OnnxModel, batch: int, policy: TimingPolicy) -> PointResult:
    """Time `session.run` at one batch size (outputs fetched to the host, so each run is complete)."""
    import torch

    if model.batch_dim is None and batch != model.fixed_batch:
        return PointResult(status="error", error=f"{model.path.name} has a fixed batch of {model.fixed_batch}: "
                                                 f"batch {batch} cannot be fed")
    feeds = _feeds(model, batch, np.random.default_rng(0))
    # ONNX Runtime runs the graph on its own intra-op thread pool: the calling thread's CPU time is spin-wait,
    # not the work, so only wall times are kept (calibrate then fits on the minimum wall time)
    result = _point(lambda: model.session.run(None, feeds), torch.device("cpu"), policy, own_threads=True)
    extra = {**result.extra, "backend": f"onnxruntime ({model.provider})"}
    if result.status == "error" and result.error and ("Failed to allocate" in result.error
                                                      or "bad_alloc" in result.error):
        return PointResult(status="oom", error=result.error.strip().splitlines()[-1][:300], extra=extra)
    return PointResult(status=result.status, samples_s=result.samples_s, peak_memory_bytes=result.peak_memory_bytes,
                       error=result.error, extra=extra)
