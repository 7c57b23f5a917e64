"""A measurement sweep for a cluster: the spec file, checked, and expanded into tasks — one `sizeup measure`
command line per sweep point, each writing into the shared run store (`--db "$SIZEUP_DB"`).

```yaml
name: llama-decode                 # names the jobs (lowercase letters, digits, dashes)
image: ghcr.io/acme/sizeup:0.1.0   # the container with sizeup (Kubernetes)
queue: team-gpus                   # the Kueue LocalQueue the jobs are submitted to (Kubernetes)
namespace: bench                   # optional (Kubernetes)
db_secret: sizeup-db               # the Secret whose key `url` holds SIZEUP_DB (Kubernetes; default sizeup-db)
command: sizeup                    # how a task calls sizeup (default "sizeup"; e.g. "python -m sizeup")
slurm: {partition: gpu, account: team, time: "01:00:00", constraints: {h100-sxm-80gb: h100}}
measure:                           # what every point measures (the flags of `sizeup measure`)
  target: llama-3.2-1b
  dtype: bf16
  budget: 600s
points:                            # one task per point; a point may override any measure key
  - {device: h100, batch: "1,2,4,8"}
  - {device: a100-80g, batch: "1,2,4"}
  - {device: h100, gpus: 8, collectives: true}   # torchrun --nproc-per-node 8 inside the task
  - {device: cpu, batch: "1,2"}
```

`device` is a catalog name (a GPU: the task runs on `--device cuda` on a node of that product) or `cpu`.
A point with `gpus` > 1 measures collectives under `torchrun` (one process per GPU): a model sweep runs on one
device. Tasks are grouped by device type and GPU count, as one Kubernetes Indexed Job or one Slurm array holds
one node selector and one GPU request (report/sweep_jobs.py renders them).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sizeup.errors import ConfigError

__all__ = ["SweepSpec", "SweepTask", "load_sweep_spec", "parse_sweep_spec", "MEASURE_KEYS"]

MAX_SPEC_BYTES = 256 * 1024
MAX_POINTS = 10_000
MAX_COUNT = 10**9
"""Largest thread, prompt or context count a spec may set (each must be at least 1)."""
MEASURE_KEYS = {"target": str, "input": (str, list), "input_spec": (str, list), "dim": (str, list), "batch": str,
                "train": bool, "grad_acc": str, "optimizer": str, "dtype": str, "latency_target": str,
                "budget": str, "threads": int, "prompt": int, "context": int, "collectives": bool,
                "profile": bool, "calibration": str}
"""`sizeup measure` flags a spec may set (the flag is the key with '-' for '_'), with their YAML types."""
POINT_KEYS = {"device": str, "gpus": int, "gpu_product": str}
TOP_KEYS = {"name", "image", "queue", "namespace", "db_secret", "command", "slurm", "measure", "points"}
SLURM_KEYS = {"partition", "account", "time", "constraints", "qos"}
_SLURM_WORD = re.compile(r"[^\s'\"\\#]+")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$")


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepTask:
    """One point of the sweep: where it runs and the command it runs."""

    index: int
    """Its index inside its group (the Job completion index, the Slurm array task id)."""
    device_type: str
    """A catalog id, or "cpu"."""
    gpus: int
    gpu_product: str | None
    argv: tuple[str, ...]
    """The command, with "$SIZEUP_DB" left for the shell to expand."""

    @property
    def command(self) -> str:
        return " ".join(a if a == '"$SIZEUP_DB"' else shlex.quote(a) for a in self.argv)


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepSpec:
    name: str
    image: str | None
    queue: str | None
    namespace: str | None
    db_secret: str
    command: tuple[str, ...]
    slurm: dict[str, Any]
    tasks: tuple[SweepTask, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def groups(self) -> dict[tuple[str, int], list[SweepTask]]:
        """Tasks by (device type, GPUs): one Job or array each, tasks indexed from 0 inside it."""
        out: dict[tuple[str, int], list[SweepTask]] = {}
        for task in self.tasks:
            out.setdefault((task.device_type, task.gpus), []).append(task)
        return out


def load_sweep_spec(path: str | Path) -> SweepSpec:
    """The spec file: a regular UTF-8 file of at most MAX_SPEC_BYTES, read as YAML 1.2 with duplicate keys
    refused (yaml_strict)."""
    from sizeup.files import read_regular, user_path
    from sizeup.yaml_strict import load_yaml

    file = user_path(path)
    raw = read_regular(file, what="sweep spec", error=ConfigError, limit=MAX_SPEC_BYTES)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{file}: not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start:,})") from None
    return parse_sweep_spec(load_yaml(text, str(file)), str(file))


def _check_keys(data: object, allowed, where: str) -> dict:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
    unknown = sorted(str(k) for k in set(data) - set(allowed))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}; expected one of {', '.join(sorted(allowed))}")
    return data


def _check_type(value: object, expected, where: str) -> None:
    kinds = expected if isinstance(expected, tuple) else (expected,)
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise ConfigError(f"{where}: {value!r:.60} is not a {names}")
    for text in value if isinstance(value, list) else [value]:
        if isinstance(text, str) and any(ord(c) < 32 or ord(c) == 127 for c in text):
            raise ConfigError(f"{where}: {text!r:.60} holds a control character (a new line?): expected one line")
    if isinstance(value, int) and not isinstance(value, bool) and not where.endswith(": gpus") \
            and not 1 <= value <= MAX_COUNT:
        raise ConfigError(f"{where}: {value:,} is not a count from 1 to {MAX_COUNT:,}"
                          if abs(value) < 10**24 else f"{where}: a {len(str(abs(value)))}-digit number is not a count")


def _text(data: dict, key: str, where: str, default: str | None = None) -> str | None:
    value = data.get(key, default)
    if value is not None:
        _check_type(value, str, f"{where}: {key}")
        if not value.strip() or "\n" in value or "\x00" in value:
            raise ConfigError(f"{where}: {key} {value!r:.60} is empty or spans lines")
    return value


def _device(name: str, where: str) -> str:
    if name == "cpu":
        return "cpu"
    from sizeup.errors import SizeupError
    from sizeup.hardware.catalog import load_catalog

    try:
        device = load_catalog().device(name)
    except SizeupError as e:
        raise ConfigError(f"{where}: device {name!r}: {e}") from None
    if device.kind != "gpu":
        raise ConfigError(f"{where}: device {name!r} is a {device.kind}, not a GPU: use device: cpu for the CPU")
    return device.id


def _flags(values: dict[str, Any]) -> list[str]:
    argv: list[str] = []
    for key in sorted(values):
        if key == "target":
            continue
        value, flag = values[key], "--" + key.replace("_", "-")
        if isinstance(value, bool):
            argv += [flag] if value else []
        elif isinstance(value, list):
            for item in value:
                argv += [flag, str(item)]
        else:
            argv += [flag, str(value)]
    return argv


def _task(index: int, point: dict, base: dict, command: tuple[str, ...], where: str) -> SweepTask:
    _check_keys(point, set(POINT_KEYS) | set(MEASURE_KEYS), where)
    for key, kind in {**POINT_KEYS, **MEASURE_KEYS}.items():
        if key in point:
            _check_type(point[key], kind, f"{where}: {key}")
    if "device" not in point:
        raise ConfigError(f"{where}: no device (a catalog GPU name, or cpu)")
    device_type = _device(point["device"], where)
    gpus = point.get("gpus", 1 if device_type != "cpu" else 0)
    if not 0 <= gpus <= 1024 or device_type == "cpu" and gpus:
        raise ConfigError(f"{where}: gpus {gpus}: expected 1 to 1024 on a GPU, none on the cpu")
    values = {**base, **{k: v for k, v in point.items() if k in MEASURE_KEYS}}
    collectives = values.get("collectives", False)
    if gpus > 1 and not collectives:
        raise ConfigError(f"{where}: gpus {gpus}: a model sweep runs on one device; several GPUs measure "
                          "collectives (collectives: true) under torchrun")
    if not collectives and not values.get("target"):
        raise ConfigError(f"{where}: no target to measure (measure.target, or collectives: true)")
    target = [] if collectives else [values["target"]]
    tail = ["--device", "cuda" if device_type != "cpu" else "cpu", "--db", '"$SIZEUP_DB"', "--json"]
    if collectives and gpus > 1:
        values = {k: v for k, v in values.items() if k != "target"}
        argv = ("torchrun", "--standalone", f"--nproc-per-node={gpus}", "-m", "sizeup", "measure", *_flags(values),
                *tail)
    else:
        argv = (*command, "measure", *target, *_flags(values), *tail)
    product = point.get("gpu_product")
    return SweepTask(index=index, device_type=device_type, gpus=gpus, gpu_product=product, argv=argv)


def parse_sweep_spec(data: object, where: str = "sweep spec") -> SweepSpec:
    data = _check_keys(data, TOP_KEYS, where)
    name = _text(data, "name", where)
    if not name or not _NAME.match(name):
        raise ConfigError(f"{where}: name {name!r}: expected 1-40 lowercase letters, digits and dashes")
    base = _check_keys(data.get("measure") or {}, MEASURE_KEYS, f"{where}: measure")
    for key, kind in MEASURE_KEYS.items():
        if key in base:
            _check_type(base[key], kind, f"{where}: measure.{key}")
    points = data.get("points")
    if not isinstance(points, list) or not points:
        raise ConfigError(f"{where}: points: expected a list of at least one sweep point")
    if len(points) > MAX_POINTS:
        raise ConfigError(f"{where}: {len(points):,} points; at most {MAX_POINTS:,}")
    command_text = _text(data, "command", where, "sizeup")
    command = tuple(shlex.split(command_text))
    slurm = _check_keys(data.get("slurm") or {}, SLURM_KEYS, f"{where}: slurm")
    for key in ("partition", "account", "time", "qos"):
        value = _text(slurm, key, f"{where}: slurm")
        if value is not None and not _SLURM_WORD.fullmatch(value):  # an #SBATCH line reads every word as an option
            raise ConfigError(f"{where}: slurm: {key} {value!r:.60}: expected one word (no spaces, quotes or #)")
    constraints = _check_keys(slurm.get("constraints") or {}, set(slurm.get("constraints") or {}),
                              f"{where}: slurm.constraints")
    tasks, counters = [], {}
    for i, point in enumerate(points):
        task = _task(0, point, base, command, f"{where}: points[{i}]")
        key = (task.device_type, task.gpus)
        tasks.append(SweepTask(index=counters.get(key, 0), device_type=task.device_type, gpus=task.gpus,
                               gpu_product=task.gpu_product, argv=task.argv))
        counters[key] = counters.get(key, 0) + 1
    slurm = {**slurm, "constraints": {_device(str(k), f"{where}: slurm.constraints"): str(v)
                                      for k, v in constraints.items()}}
    return SweepSpec(name=name, image=_text(data, "image", where), queue=_text(data, "queue", where),
                     namespace=_text(data, "namespace", where), db_secret=_text(data, "db_secret", where, "sizeup-db"),
                     command=command, slurm=slurm, tasks=tuple(tasks))
