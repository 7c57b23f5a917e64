"""This machine: CPU model, cores, ISA flags, memory, and CUDA GPUs mapped to catalog entries.

GPUs are found through NVML (nvidia-ml-py) when installed, else `nvidia-smi`, else torch if it is
installed; none of them is required.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sizeup.errors import ResolveError
from sizeup.units import format_bytes

__all__ = ["LocalGPU", "LocalMachine", "detect_local"]

_INTERESTING_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "avx512_fp16",
                      "amx_tile", "amx_bf16", "amx_int8", "asimd", "sve", "sve2", "bf16", "i8mm")


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalGPU:
    index: int
    name: str
    memory_bytes: int | None
    catalog_id: str | None
    via: str

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "name": self.name, "memory_bytes": self.memory_bytes,
                "catalog_id": self.catalog_id, "via": self.via}


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalMachine:
    cpu_model: str
    architecture: str
    logical_cores: int
    physical_cores: int | None
    isa_flags: tuple[str, ...]
    memory_bytes: int | None
    cpu_catalog_id: str | None
    gpus: tuple[LocalGPU, ...] = field(default_factory=tuple)
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "cpu": {"model": self.cpu_model, "architecture": self.architecture, "logical_cores": self.logical_cores,
                    "physical_cores": self.physical_cores, "isa_flags": list(self.isa_flags),
                    "memory_bytes": self.memory_bytes, "catalog_id": self.cpu_catalog_id},
            "gpus": [g.to_dict() for g in self.gpus],
            "notes": list(self.notes),
        }

    def render(self) -> str:
        lines = [f"CPU: {self.cpu_model} ({self.architecture}), {self.physical_cores or '?'} cores / "
                 f"{self.logical_cores} threads, memory {format_bytes(self.memory_bytes or 0)}",
                 f"ISA: {' '.join(self.isa_flags) or 'unknown'}",
                 f"catalog: {self.cpu_catalog_id or 'no matching CPU entry (measure with sizeup calibrate)'}"]
        if not self.gpus:
            lines.append("GPUs: none found")
        for g in self.gpus:
            mem = format_bytes(g.memory_bytes) if g.memory_bytes else "?"
            lines.append(f"GPU {g.index}: {g.name}, {mem} -> {g.catalog_id or 'not in the catalog'} (via {g.via})")
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)


def _cpuinfo() -> tuple[str, tuple[str, ...], int | None]:
    model, flags, cores = platform.processor() or platform.machine(), set(), None
    path = Path("/proc/cpuinfo")
    if path.is_file():
        physical = set()
        current_phys = "0"
        for line in path.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            key, value = key.strip(), value.strip()
            if key in ("model name", "Model") and value:
                model = value
            elif key in ("flags", "Features"):
                flags.update(value.split())
            elif key == "physical id":
                current_phys = value
            elif key == "core id":
                physical.add((current_phys, value))
        cores = len(physical) or None
    return model, tuple(f for f in _INTERESTING_FLAGS if f in flags), cores


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _gpus_nvml() -> list[tuple[str, int | None]]:
    import pynvml  # nvidia-ml-py

    pynvml.nvmlInit()
    try:
        out = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(handle)
            out.append((name.decode() if isinstance(name, bytes) else name,
                        int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)))
        return out
    finally:
        pynvml.nvmlShutdown()


def _gpus_smi() -> list[tuple[str, int | None]]:
    proc = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
                          capture_output=True, text=True, timeout=10, check=True)
    out = []
    for line in proc.stdout.strip().splitlines():
        name, _, mib = line.rpartition(",")
        out.append((name.strip(), int(float(mib)) * 2**20 if mib.strip() else None))
    return out


def _gpus_torch() -> list[tuple[str, int | None]]:
    import torch

    if not torch.cuda.is_available():
        return []
    return [(torch.cuda.get_device_name(i), torch.cuda.get_device_properties(i).total_memory)
            for i in range(torch.cuda.device_count())]


def _find_gpus() -> tuple[list[tuple[str, int | None]], str, list[str]]:
    import importlib.util

    notes = []
    probes = []
    if importlib.util.find_spec("pynvml"):
        probes.append(("nvml", _gpus_nvml))
    if shutil.which("nvidia-smi"):
        probes.append(("nvidia-smi", _gpus_smi))
    if importlib.util.find_spec("torch"):
        probes.append(("torch", _gpus_torch))
    for via, probe in probes:
        try:
            return probe(), via, notes
        except Exception as e:  # a broken driver must not stop the report
            notes.append(f"{via} failed: {type(e).__name__}: {e}")
    return [], "none", notes


def _map(catalog, name: str, notes: list[str]) -> str | None:
    """The catalog id of a name as the vendor tool prints it (the resolver of `hw show`), or None."""
    try:
        device = catalog.device(name)
    except ResolveError as e:
        notes.append(f"{name!r}: {e}")
        return None
    if device.resolved_as:
        notes.append(device.resolved_as)
    return device.id


def detect_local(catalog) -> LocalMachine:
    model, flags, cores = _cpuinfo()
    found, via, notes = _find_gpus()
    cpu_id = _map(catalog, model, notes)
    gpus = []
    for i, (name, memory) in enumerate(found):
        catalog_id = _map(catalog, name, notes)
        gpus.append(LocalGPU(index=i, name=name, memory_bytes=memory, catalog_id=catalog_id, via=via))
    return LocalMachine(cpu_model=model, architecture=platform.machine(), logical_cores=os.cpu_count() or 1,
                        physical_cores=cores, isa_flags=flags, memory_bytes=_memory_bytes(), cpu_catalog_id=cpu_id,
                        gpus=tuple(gpus), notes=tuple(notes))
