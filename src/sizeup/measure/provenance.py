"""What produced a run, recorded when it starts: engine and version, GPU driver and product, clocks and power
limit, sizeup version, a hash of the workload, the host, the device type and the workload class.

The host is this machine's name, or `$SIZEUP_HOST` where it is set (a pod or a container whose host name is
random: the job sets it to the node or the sweep point). The device type groups runs for calibration across
machines: the catalog id of the GPU's product name or of the CPU model where the catalog knows it (the resolver
of `sizeup hw show`), else "gpu:<product>" / "cpu:<model>".
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
from pathlib import Path
from typing import Any

from sizeup.store.provenance import from_environment, workload_class_of
from sizeup.store.records import Provenance

__all__ = ["capture_provenance", "device_type_of", "workload_hash", "host_name", "split_engine"]

HASH_FILE_LIMIT = 1 << 30
"""A target file is hashed up to this many bytes (its size is hashed too)."""


def host_name() -> str:
    return os.environ.get("SIZEUP_HOST") or socket.gethostname()


def split_engine(text: str | None) -> tuple[str | None, str | None]:
    """("vllm", "0.10") from "vllm@0.10"; (name, None) without a version; (None, None) for nothing."""
    if not text:
        return None, None
    name, _, version = str(text).partition("@")
    return name.strip() or None, version.strip() or None


def device_type_of(product: str | None, *, gpu: bool) -> str | None:
    """The catalog id of a GPU product name or CPU model, else "gpu:<product>" / "cpu:<model>"; None for
    nothing. The catalog's resolver matches names as vendor tools print them."""
    if not product:
        return None
    from sizeup.errors import SizeupError
    from sizeup.hardware.catalog import load_catalog

    try:
        return load_catalog().device(product).id
    except SizeupError:
        return f"{'gpu' if gpu else 'cpu'}:{product}"


def _target_file(target: str) -> Path | None:
    """The file a target names: MODEL.onnx, FILE.py of FILE.py:FACTORY, a config.json; None for a preset or a
    package.module:FACTORY."""
    from sizeup.files import user_path

    candidate = target.rsplit(":", 1)[0] if target.count(":") == 1 and not target.endswith(".onnx") else target
    path = user_path(candidate)
    try:
        return path if path.is_file() else None
    except OSError:
        return None


def workload_hash(kind: str, target: str, config: dict) -> str:
    """sha256 of the run's kind, target name, config (canonical JSON) and, where the target is a file, its
    bytes: two runs with the same hash measured the same thing. 16 hex digits."""
    digest = hashlib.sha256()
    digest.update(json.dumps({"kind": kind, "target": str(target), "config": config}, sort_keys=True,
                             default=str).encode())
    path = _target_file(str(target))
    if path is not None:
        try:
            with open(path, "rb") as fh:
                digest.update(str(path.stat().st_size).encode())
                remaining = HASH_FILE_LIMIT
                while remaining > 0 and (chunk := fh.read(min(1 << 20, remaining))):
                    digest.update(chunk)
                    remaining -= len(chunk)
        except OSError:
            digest.update(b"<unreadable>")
    return digest.hexdigest()[:16]


def capture_provenance(kind: str, target: str, config: dict, environment: dict, *, workload_class: str | None = None,
                       engine: str | None = None, engine_version: str | None = None,
                       device_type: str | None = None) -> Provenance:
    """The provenance of a run starting now (see the module); explicit arguments win over what the environment
    says. Never raises for what it cannot read: the field stays None."""
    from sizeup import __version__

    values: dict[str, Any] = from_environment(kind, config, environment, {"host": host_name()})
    if engine:
        values["engine"], values["engine_version"] = engine, engine_version
    gpu = str(environment.get("device", "")).startswith("cuda")
    product = environment.get("gpu_name") if gpu else environment.get("cpu_model")
    values["device_type"] = device_type or device_type_of(product if isinstance(product, str) else None, gpu=gpu)
    values["workload_class"] = workload_class or workload_class_of(kind, config)
    values["sizeup_version"] = __version__
    values["workload_hash"] = workload_hash(kind, target, config)
    return Provenance.from_dict({k: v for k, v in values.items() if v is not None})
