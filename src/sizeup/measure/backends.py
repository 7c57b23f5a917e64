"""The same model run by several backends, side by side: PyTorch eager, torch.compile, channels-last
memory format (convnets), and ONNX Runtime (CPU, or the CUDA execution provider when present):
latency percentiles, throughput, peak memory, agreement of the outputs with eager, and the one-off
cost (compilation or export) each backend pays first.
"""

from __future__ import annotations

import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sizeup.errors import MeasureError
from sizeup.measure.harness import TimingPolicy, _RSSPeak, make_inputs, resolve_device, time_callable

__all__ = ["BACKENDS", "BackendResult", "compare_backends"]

BACKENDS = ("eager", "compile", "channels_last", "onnxruntime")


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendResult:
    backend: str
    status: str
    """ok | unsupported | error"""
    samples_s: tuple[float, ...] = ()
    setup_s: float = 0.0
    """One-off cost before the first timed run: compilation, export and session creation."""
    peak_memory_bytes: int | None = None
    max_abs_diff: float | None = None
    """Largest absolute difference of the outputs from eager's."""
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, batch: int) -> dict[str, Any]:
        q = (lambda p: float(np.percentile(self.samples_s, p))) if self.samples_s else (lambda p: None)
        p50 = q(50)
        return {"backend": self.backend, "status": self.status, "latency_p50_s": p50, "latency_p95_s": q(95),
                "latency_p99_s": q(99), "throughput_per_s": batch / p50 if p50 else None, "setup_s": self.setup_s,
                "peak_memory_bytes": self.peak_memory_bytes, "max_abs_diff": self.max_abs_diff,
                "error": self.error, **self.extra}


def _first_tensor(out: Any) -> torch.Tensor:
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, (list, tuple)) and out and isinstance(out[0], torch.Tensor):
        return out[0]
    raise MeasureError("backend comparison needs a model whose output is a tensor (or a tuple starting with one)")


def _run_backend(name: str, model: torch.nn.Module, args: list, kwargs: dict, device: torch.device,
                 policy: TimingPolicy, reference: torch.Tensor | None) -> BackendResult:
    setup_start = time.perf_counter()
    if name == "eager":
        def run() -> Any:
            with torch.inference_mode():
                return model(*args, **kwargs)
    elif name == "compile":
        compiled = torch.compile(model)

        def run() -> Any:
            with torch.inference_mode():
                return compiled(*args, **kwargs)
        run()  # compilation happens on the first call
    elif name == "channels_last":
        if not any(isinstance(a, torch.Tensor) and a.dim() == 4 for a in args):
            return BackendResult(backend=name, status="unsupported", error="channels-last needs a 4-D input")
        import copy

        cl_model = copy.deepcopy(model).to(memory_format=torch.channels_last)
        cl_args = [a.contiguous(memory_format=torch.channels_last) if isinstance(a, torch.Tensor) and a.dim() == 4
                   else a for a in args]

        def run() -> Any:
            with torch.inference_mode():
                return cl_model(*cl_args, **kwargs)
    elif name == "onnxruntime":
        try:
            import onnxruntime as ort
        except ImportError:
            return BackendResult(backend=name, status="unsupported",
                                 error="onnxruntime is not installed: pip install onnxruntime")
        if kwargs:
            return BackendResult(backend=name, status="unsupported", error="keyword inputs are not exported")
        folder = tempfile.mkdtemp(prefix="sizeup-onnx-")
        path = str(Path(folder) / "model.onnx")
        with torch.inference_mode():
            torch.onnx.export(model, tuple(args), path, dynamo=False, opset_version=17)
        providers = ["CUDAExecutionProvider", "CPUExecutionProvider"] if device.type == "cuda" else \
            ["CPUExecutionProvider"]
        session = ort.InferenceSession(path, providers=providers)
        feeds = {i.name: a.detach().cpu().numpy() for i, a in zip(session.get_inputs(), args)}

        def run() -> Any:
            return torch.from_numpy(session.run(None, feeds)[0])
    else:
        raise MeasureError(f"unknown backend {name!r}: expected {', '.join(BACKENDS)}")
    setup = time.perf_counter() - setup_start
    samples = time_callable(run, device, policy)
    rss = _RSSPeak()
    with rss:
        out = _first_tensor(run())
    diff = None
    if reference is not None:
        diff = float((out.float().cpu() - reference.float().cpu()).abs().max())
    peak = rss.delta if device.type != "cuda" else int(torch.cuda.max_memory_allocated(device))
    return BackendResult(backend=name, status="ok", samples_s=tuple(samples), setup_s=setup, peak_memory_bytes=peak,
                         max_abs_diff=diff)


def compare_backends(factory: Callable[[], Any], specs: Sequence[Any], batch: int, backends: Sequence[str],
                     device: str = "cpu", policy: TimingPolicy | None = None) -> list[BackendResult]:
    """Each backend on the same weights and inputs; a backend that fails is reported, not fatal."""
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown:
        raise MeasureError(f"unknown backend {unknown[0]!r}: expected {', '.join(BACKENDS)}")
    dev = resolve_device(device)
    policy = policy or TimingPolicy()
    torch.manual_seed(0)
    model = factory().to(dev).eval()
    args, kwargs = make_inputs(specs, batch, dev, torch.float32)
    with torch.inference_mode():
        reference = _first_tensor(model(*args, **kwargs))
    results = []
    for name in backends:
        if dev.type == "cuda":
            torch.cuda.reset_peak_memory_stats(dev)
        try:
            results.append(_run_backend(name, model, args, kwargs, dev, policy,
                                        None if name == "eager" else reference))
        except Exception as e:  # one backend's failure is a row of the table
            results.append(BackendResult(backend=name, status="error",
                                         error=f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}",
                                         extra={"traceback": traceback.format_exc()}))
    return results
