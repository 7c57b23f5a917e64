"""A measurement sweep as cluster jobs (`sizeup sweep SPEC --emit k8s|slurm`): every task runs `sizeup measure
… --db "$SIZEUP_DB"` into the shared run store.

Kubernetes: one Indexed Job per device type and GPU count (a Job has one pod template: one node selector, one
GPU request), one completion index per sweep point; the pod's command picks its point from
$JOB_COMPLETION_INDEX. Each Job carries the Kueue queue label `kueue.x-k8s.io/queue-name` and is created
suspended, for Kueue to admit it when the queue's quota allows; GPUs are requested as `nvidia.com/gpu` on nodes
whose GPU Feature Discovery label `nvidia.com/gpu.product` names the device; SIZEUP_DB comes from a Secret, and
SIZEUP_HOST (the host recorded in each run's provenance) from the pod's node name.

Slurm: one `sbatch --array=0-(N-1)` script per device type and GPU count, `--gres=gpu:N`, the site's
`--constraint` for the device type where the spec gives one; the script picks its point from
$SLURM_ARRAY_TASK_ID and records the node as SIZEUP_HOST.
"""

from __future__ import annotations

import shlex
from typing import Any

__all__ = ["k8s_jobs", "slurm_scripts", "gpu_product_label", "case_script"]

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRODUCT_LABEL = "nvidia.com/gpu.product"


def gpu_product_label(device_type: str, given: str | None) -> tuple[str, str]:
    """(label value, how it was found): the spec's `gpu_product`, else the catalog device's name with its spaces
    as dashes (GPU Feature Discovery's label is the driver's product name so written, e.g. Tesla-T4; the
    catalog's name may differ from the driver's: check `kubectl get nodes -L nvidia.com/gpu.product`)."""
    if given:
        return given.replace(" ", "-"), "from the sweep spec (gpu_product)"
    from sizeup.hardware.catalog import load_catalog

    name = load_catalog().device(device_type).name
    return name.replace(" ", "-"), (f"derived from the catalog name {name!r}: check `kubectl get nodes -L "
                                    f"{PRODUCT_LABEL}`, and give gpu_product in the spec if it differs")


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")


def case_script(tasks, variable: str) -> str:
    """A POSIX sh `case` running the task whose index is in $variable."""
    lines = [f'case "${{{variable}:?}}" in']
    for task in tasks:
        lines.append(f"  {task.index}) exec {task.command} ;;")
    lines.append(f'  *) echo "sizeup sweep: no point ${{{variable}}}" >&2; exit 2 ;;')
    lines.append("esac")
    return "\n".join(lines)


def _group_name(spec, device_type: str, gpus: int) -> str:
    name = f"{spec.name}-{_slug(device_type)}" + (f"-{gpus}gpu" if gpus > 1 else "")
    return name[:63].rstrip("-")


def k8s_jobs(spec) -> list[dict[str, Any]]:
    """The Indexed Jobs of the sweep (see the module), as Kubernetes objects."""
    from sizeup.errors import ConfigError

    if not spec.image:
        raise ConfigError(f"sweep {spec.name}: --emit k8s needs image: (the container with sizeup)")
    jobs = []
    for (device_type, gpus), tasks in spec.groups().items():
        name = _group_name(spec, device_type, gpus)
        labels = {"app.kubernetes.io/name": "sizeup-sweep", "app.kubernetes.io/instance": name,
                  "sizeup.io/sweep": spec.name}
        annotations = {"sizeup.io/device-type": device_type,
                       "sizeup.io/points": str(len(tasks))}
        pod: dict[str, Any] = {"restartPolicy": "Never", "containers": [{
            "name": "measure", "image": spec.image, "command": ["/bin/sh", "-c", case_script(tasks,
                                                                                            "JOB_COMPLETION_INDEX")],
            "env": [{"name": "SIZEUP_DB", "valueFrom": {"secretKeyRef": {"name": spec.db_secret, "key": "url"}}},
                    {"name": "SIZEUP_HOST", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]}]}
        if gpus:
            product, how = gpu_product_label(device_type, tasks[0].gpu_product)
            pod["nodeSelector"] = {PRODUCT_LABEL: product}
            pod["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": gpus},
                                                 "requests": {"nvidia.com/gpu": gpus}}
            annotations["sizeup.io/gpu-product"] = how
        metadata: dict[str, Any] = {"name": name, "labels": dict(labels), "annotations": annotations}
        if spec.queue:
            metadata["labels"][QUEUE_LABEL] = spec.queue
        if spec.namespace:
            metadata["namespace"] = spec.namespace
        jobs.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata,
                     "spec": {"completionMode": "Indexed", "completions": len(tasks), "parallelism": len(tasks),
                              "backoffLimitPerIndex": 1, "maxFailedIndexes": len(tasks), "suspend": True,
                              "template": {"metadata": {"labels": labels}, "spec": pod}}})
    return jobs


def slurm_scripts(spec) -> dict[str, str]:
    """{file name: `sbatch` script} of the sweep (see the module)."""
    out = {}
    for (device_type, gpus), tasks in spec.groups().items():
        name = _group_name(spec, device_type, gpus)
        head = ["#!/bin/bash", f"#SBATCH --job-name={name}", f"#SBATCH --array=0-{len(tasks) - 1}",
                "#SBATCH --nodes=1", "#SBATCH --ntasks=1", f"#SBATCH --output={name}-%A_%a.out"]
        if gpus:
            head.append(f"#SBATCH --gres=gpu:{gpus}")
        constraint = spec.slurm.get("constraints", {}).get(device_type)
        if constraint:
            head.append(f"#SBATCH --constraint={constraint}")
        for key in ("partition", "account", "time", "qos"):
            if spec.slurm.get(key):
                head.append(f"#SBATCH --{key}={spec.slurm[key]}")
        body = ["", f"# sizeup sweep {spec.name}: {len(tasks)} point(s) on {device_type}"
                    + (f" x{gpus} GPU" if gpus else "") + "; submit with: sbatch " + shlex.quote(f"{name}.sbatch"),
                "set -euo pipefail",
                ': "${SIZEUP_DB:?set SIZEUP_DB to the shared run store (postgresql://...)}"',
                'export SIZEUP_HOST="${SLURMD_NODENAME:-$(hostname)}"',
                case_script(tasks, "SLURM_ARRAY_TASK_ID")]
        out[f"{name}.sbatch"] = "\n".join(head + body) + "\n"
    return out
