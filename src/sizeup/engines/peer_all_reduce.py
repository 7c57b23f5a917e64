"""The one-pass all-reduce over peer memory that serving engines run instead of NCCL's ring for small messages:
vLLM's custom all-reduce (CUDA IPC buffers, from 0.3; on ROCm over xGMI), SGLang's copy of it (and, for some
releases, the TensorRT-LLM kernels ported into sgl-kernel), TensorRT-LLM's own one-shot / two-shot plugin. Each
engine's file states where its kernel runs (`PeerAllReduce`); `peer_all_reduce` turns that into the
`TensorParallel` the pricing layer reads, with the notes that say which all-reduce was priced and why.

Profile keys (data/engines/NAME.yaml): `custom_all_reduce` (on/off by release), `custom_all_reduce_latency_s`
(the kernel's fixed latency on NVIDIA GPUs), `custom_all_reduce_rocm` and `custom_all_reduce_latency_s.hip` (on
AMD Instinct GPUs joined by xGMI), `custom_all_reduce_max_bytes` (its buffer: larger messages run NCCL / RCCL)."""

from __future__ import annotations

from dataclasses import dataclass

from sizeup.engines.base import ExecutionModel, TensorParallel
from sizeup.hardware.segments import segment_of

__all__ = ["PeerAllReduce", "peer_all_reduce"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PeerAllReduce:
    """Where an engine's own all-reduce runs."""

    name: str
    """As the estimate names it ("vLLM custom all-reduce")."""
    world_sizes: tuple[int, ...] = (2, 4, 6, 8)
    """Group sizes the kernel takes (vLLM: 2, 4, 6, 8; TensorRT-LLM's AUTO table: 2, 4, 8)."""
    pcie_pairs: bool = True
    """Whether it runs on two peer-capable PCIe GPUs (vLLM: yes; TensorRT-LLM's AUTO: NVLink only)."""
    max_bytes_two_gpus: float | None = None
    """Buffer at 2 GPUs where it differs from `custom_all_reduce_max_bytes` (TensorRT-LLM: 16 MB at TP <= 2)."""


def peer_all_reduce(model: ExecutionModel, link_kind: str, gpus: int, how: PeerAllReduce,
                    host_s=None, notes: tuple[str, ...] = ()) -> TensorParallel | None:
    """The engine's all-reduce over `gpus` GPUs on a link of kind `link_kind` (nvlink / xgmi / pcie): its kernel
    where the engine takes it, NCCL's (RCCL's) ring otherwise; `host_s` and `notes` pass through."""
    profile, device = model.profile, model.device
    notes = list(notes)
    latency, why_not = None, None
    if not profile.value("custom_all_reduce", 1):
        why_not = f"{model.label} has no all-reduce kernel of its own"
    elif gpus not in how.world_sizes:
        why_not = f"{how.name} takes {', '.join(map(str, how.world_sizes))} GPUs, not {gpus}"
    elif device.vendor == "nvidia" and link_kind.startswith("nvlink"):
        latency = profile.range("custom_all_reduce_latency_s")
    elif device.vendor == "nvidia" and link_kind == "pcie":
        if not how.pcie_pairs or gpus != 2:
            why_not = (f"{how.name} runs over NVLink{' or on two PCIe GPUs' if how.pcie_pairs else ''} only: "
                       f"{gpus} {device.id} on PCIe run NCCL's ring")
        elif segment_of(device) == "consumer":
            why_not = (f"{device.id}: GeForce boards have no PCIe peer access, so {how.name} is off and NCCL runs "
                       f"the all-reduce")
        else:
            latency = profile.range("custom_all_reduce_latency_s")
            notes.append(f"{how.name} over PCIe: assumes the two {device.id} reach each other's memory (P2P), as "
                         f"data-centre and workstation boards do on bare metal; a VM without P2P runs NCCL")
    elif device.vendor == "amd" and link_kind == "xgmi":
        if profile.value("custom_all_reduce_rocm", 0):
            latency = profile.range("custom_all_reduce_latency_s.hip")
        else:
            why_not = f"{model.label} runs no all-reduce of its own on ROCm"
    if latency is None:
        if why_not:
            notes.append(f"per-layer all-reduce: NCCL/RCCL ring ({why_not})")
        if host_s is None and not notes:
            return None
        return TensorParallel(step_host_s=host_s, notes=tuple(notes))
    cap = profile.value("custom_all_reduce_max_bytes", 8 * 1024 * 1024)
    if gpus <= 2 and how.max_bytes_two_gpus:
        cap = how.max_bytes_two_gpus
    notes.append(f"per-layer all-reduce: {how.name}, {latency.typical * 1e6:,.1f} µs each "
                 f"({latency.low * 1e6:,.1f}-{latency.high * 1e6:,.1f}) plus the link's transfer, for messages under "
                 f"its {cap / 2**20:,.0f} MiB buffer; larger ones (a long prompt's) run the NCCL/RCCL ring")
    return TensorParallel(all_reduce_latency_s=latency, all_reduce_max_bytes=cap, all_reduce=how.name,
                          step_host_s=host_s, notes=tuple(notes))
