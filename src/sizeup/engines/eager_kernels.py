"""Kernels an eager engine (hf: transformers without CUDA graphs) really launches per decode step, beyond the
ledger's one per op. The ledger counts one op per norm, per rotary, per KV-cache write...; eager PyTorch runs
RMSNorm as 6 aten kernels (8 with the casts of a half-precision model), rotate_half over q and k as 10, and so on.
data/engines/hf.yaml holds the counts (`eager_kernels.<ledger op>`, `@fp32` for a float32 model, `mixer.<op>` for the
ops of a Mamba mixer, `rotary_tables` once per step), measured with benchmarks/count_hf_eager_kernels.py. Where
the host sets the pace, decode time grows by the extra kernels × the engine's per-op host cost.

A state-space (Mamba) layer adds host time of its own (ssm_layer_host): the Triton launch of mamba_ssm's
selective_state_update from Python (`ssm_triton_launches` × `ssm_step_host_s`, the Triton 2.x launcher) and, for
transformers' Mamba-1 mixer, the host-device syncs its `cache_position[0] > 0` tests force (`ssm_host_syncs.v1`
× (`host_sync_s` + one per-op cost for the comparison kernel)); Mamba-2's mixer branches on a Python int."""

from __future__ import annotations

from sizeup.hardware.schema import DeviceSpec
from sizeup.ingest.arch import SSMSpec
from sizeup.ledger import Ledger, OpKind
from sizeup.engines.profile import EngineProfile
from sizeup.ranges import Range

__all__ = ["eager_extra_kernels", "eager_kernel_overhead", "ssm_layer_host", "transformers_eager"]

PREFIX = "eager_kernels."


def transformers_eager() -> EngineProfile:
    """The settings of transformers' eager modules at the current release (the hf engine's: its `eager_kernels.*`
    counts per ledger op), for the training frameworks that run the same modules."""
    from sizeup.engines.profile import engine_profile

    return engine_profile("hf")


def eager_extra_kernels(engine: EngineProfile, ledger: Ledger, fp32: bool) -> float:
    """Kernels per step the engine launches beyond the ledger's one per (non-view) op; may be negative where a
    fused kernel runs several ledger ops (Mamba's conv activation inside causal_conv1d_update)."""
    table = {k[len(PREFIX):]: v for k, v in engine.values.items() if k.startswith(PREFIX)}
    if not table:
        return 0.0
    extra = 0.0
    for o in ledger.ops:
        if o.kind == OpKind.VIEW:
            continue
        key = f"mixer.{o.op}" if ".mixer" in o.scope else o.op
        n = table.get(f"{key}@fp32") if fp32 else None
        n = table.get(key) if n is None else n
        if n is not None:
            extra += o.count * (n - 1)
    if any(o.op == "rotary_embedding" for o in ledger.ops):
        extra += table.get("rotary_tables@fp32" if fp32 else "rotary_tables", table.get("rotary_tables", 0.0))
    return extra


def eager_kernel_overhead(engine: EngineProfile, ledger: Ledger, device: DeviceSpec, fp32: bool) -> Range | None:
    """Host time per decode step of those extra kernels at the engine's per-op cost (decode_overhead_s); None
    on a CPU (no launches: the same thread computes), for an engine without counts, and where the step launches
    no more kernels than the ledger has ops (a net saving is not subtracted: each op keeps its own bound)."""
    per_op = engine.range("decode_overhead_s")
    if device.kind == "cpu" or per_op is None:
        return None
    extra = eager_extra_kernels(engine, ledger, fp32)
    return per_op.scale(extra) if extra > 0 else None


def ssm_layer_host(engine: EngineProfile, ssm: SSMSpec, device: DeviceSpec) -> Range | None:
    """Host time per SSM layer and decode step outside the ledger's ops, for an engine that steps the mixer
    through mamba_ssm's kernels from Python: its Triton launches and the syncs the mixer's control flow forces.
    None where the engine has no such term, and where mamba_ssm does not run (its kernels are CUDA / ROCm only:
    elsewhere transformers runs its plain-torch path, whose ops the ledger already prices)."""
    launch = engine.range("ssm_step_host_s")
    if launch is None or device.kind != "gpu" or device.vendor not in ("nvidia", "amd"):
        return None
    host = launch.scale(engine.value("ssm_triton_launches", 1.0))
    syncs = engine.value(f"ssm_host_syncs.v{ssm.version}", 0.0)
    sync, per_op = engine.range("host_sync_s"), engine.range("decode_overhead_s")
    if syncs and sync is not None:
        host = host + (sync + per_op if per_op is not None else sync).scale(syncs)
    return host
