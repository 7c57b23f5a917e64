"""Kubernetes manifests that carry a plan out (`sizeup plan … --deploy DIR`).

Serving plans: a Deployment of the chosen engine — vLLM (`vllm/vllm-openai`), TensorRT-LLM
(`trtllm-serve` in NVIDIA's release image) or the llama.cpp server (`ghcr.io/ggml-org/llama.cpp:server-cuda`),
or for a request/response model planned on torch (vision) Triton Inference Server reading a model
repository from a PersistentVolumeClaim — with the flags the plan implies (tensor parallel size, maximum model length = the p95 prompt plus
the p95 output, GPU memory utilisation of the engine profile, maximum concurrent sequences = the
batch the plan simulated, weight format), `nvidia.com/gpu` requests, a node selector, /health
readiness and liveness probes; a Service; an autoscaling/v2 HPA from the sheet's floor (replicas at
the mean load) to its replicas with N+1, on requests per second per pod at the scale-out point; a
PodDisruptionBudget that lets only the spare replica go at a time.
Fine-tune / pre-train plans: a Job with the GPUs, the deadline as activeDeadlineSeconds. Edge
devices run no Kubernetes: refused in one line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sizeup.errors import ConfigError

__all__ = ["manifests", "write_deploy", "IMAGES"]

IMAGES = {"vllm": "vllm/vllm-openai:latest", "llama.cpp": "ghcr.io/ggml-org/llama.cpp:server-cuda",
          "tensorrt-llm": "nvcr.io/nvidia/tensorrt-llm/release:latest",
          "torch": "nvcr.io/nvidia/tritonserver:24.08-py3"}
"""A request/response (vision) model planned on torch is served by Triton from a model repository."""
PORTS = {"vllm": 8000, "llama.cpp": 8080, "tensorrt-llm": 8000, "torch": 8000}
_HEALTH = {"torch": ("/v2/health/ready", "/v2/health/live")}
_VLLM_QUANT = {"awq-int4": "awq", "gptq-int4": "gptq", "fp8": "fp8", "int8": "bitsandbytes", "nf4": "bitsandbytes"}
_DTYPE = {"bf16": "bfloat16", "fp16": "float16", "f16": "float16", "fp32": "float32"}
_METRIC = "http_requests_per_second"
"""The per-pod request rate a Prometheus adapter exposes (its walkthrough's name); say so in the annotation."""


def _hf_id(model: str) -> str:
    """The Hugging Face repository of a catalog preset, else the model string as given."""
    from sizeup.hardware.catalog import builtin_data_dir

    path = builtin_data_dir() / "models" / f"{model}.json"
    try:
        return json.loads(path.read_text())["sizeup"]["hf_id"]
    except (OSError, KeyError, ValueError, TypeError):
        return model


def _name(scenario_name: str) -> str:
    import re

    name = re.sub(r"[^a-z0-9-]+", "-", scenario_name.lower()).strip("-")[:50].strip("-")
    return name or "sizeup"


def _node_selector(chosen) -> tuple[dict[str, str], str]:
    if chosen.offer is not None and not chosen.owned:
        return ({"node.kubernetes.io/instance-type": chosen.offer.instance},
                f"{chosen.offer.provider} {chosen.offer.instance} ({chosen.offer.region})")
    product = chosen.device.name.replace(" ", "-")
    return ({"nvidia.com/gpu.product": product},
            f"GPU Feature Discovery label derived from the device name {chosen.device.name!r}: check `kubectl get "
            "nodes -L nvidia.com/gpu.product`")


def _vllm_multimodal_args(traffic, chosen) -> list[str]:
    """The images per prompt (and their size) the plan's vLLM multimodal profile assumed
    (price/vllm_multimodal.py), so the server profiles, and keeps back, what the plan sized; without them
    vLLM profiles its default limit of images at the processor's largest size."""
    if not chosen.detail.get("multimodal_profile") or not getattr(traffic, "images", 0):
        return []
    image: Any = traffic.images
    if traffic.image_hw:
        image = {"count": traffic.images, "width": traffic.image_hw[1], "height": traffic.image_hw[0]}
    return ["--limit-mm-per-prompt", json.dumps({"image": image}, separators=(",", ":"))]


def _engine_args(result, chosen) -> tuple[list[str], list[str]]:
    """(command, args) of the engine container."""
    from sizeup.price.engines import get_engine

    traffic = result.scenario.traffic
    model = _hf_id(result.scenario.model)
    max_len = traffic.prompt_p95_tokens + traffic.output_p95_tokens
    port = str(PORTS[chosen.engine])
    if chosen.engine == "vllm":
        util = get_engine("vllm").value("gpu_memory_utilization", 0.92)
        args = ["--model", model, "--host", "0.0.0.0", "--port", port,
                "--tensor-parallel-size", str(chosen.gpus), "--max-model-len", str(max_len),
                "--gpu-memory-utilization", f"{util:g}", "--max-num-seqs", str(max(1, chosen.max_batch))]
        if chosen.quant in _VLLM_QUANT:
            args += ["--quantization", _VLLM_QUANT[chosen.quant]]
        if chosen.quant in _DTYPE:
            args += ["--dtype", _DTYPE[chosen.quant]]
        return [], args + _vllm_multimodal_args(traffic, chosen)
    if chosen.engine == "llama.cpp":
        parallel = max(1, chosen.max_batch)
        return [], ["--hf-repo", f"{model}-GGUF:{chosen.quant.upper()}",
                    "--host", "0.0.0.0", "--port", port, "--n-gpu-layers", "999",
                    "--ctx-size", str(max_len * parallel), "--parallel", str(parallel)]
    if chosen.engine == "tensorrt-llm":
        return ["trtllm-serve"], [model, "--host", "0.0.0.0", "--port", port, "--tp_size", str(chosen.gpus),
                                  "--max_seq_len", str(max_len), "--max_batch_size", str(max(1, chosen.max_batch)),
                                  "--kv_cache_free_gpu_memory_fraction", "0.9"]
    if chosen.engine == "torch":
        return ["tritonserver"], ["--model-repository=/models", f"--http-port={port}"]
    raise ConfigError(f"--deploy: engine {chosen.engine!r} has no server image; expected vllm, tensorrt-llm or llama.cpp")


def _serving(result, chosen) -> list[dict[str, Any]]:
    plan = chosen.replicas
    name = _name(result.scenario.name)
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "sizeup"}
    selector, where = _node_selector(chosen)
    command, args = _engine_args(result, chosen)
    port = PORTS[chosen.engine]
    ready, live = _HEALTH.get(chosen.engine, ("/health", "/health"))
    container: dict[str, Any] = {
        "name": chosen.engine.replace(".", "-"), "image": IMAGES[chosen.engine], "args": args,
        "ports": [{"name": "http", "containerPort": port}],
        "resources": {"limits": {"nvidia.com/gpu": chosen.gpus}, "requests": {"nvidia.com/gpu": chosen.gpus}},
        "readinessProbe": {"httpGet": {"path": ready, "port": port}, "periodSeconds": 10, "initialDelaySeconds": 30,
                           "failureThreshold": 3},
        "livenessProbe": {"httpGet": {"path": live, "port": port}, "periodSeconds": 10, "initialDelaySeconds": 600,
                          "failureThreshold": 6},
        "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}]}
    volumes: list[dict[str, Any]] = [{"name": "shm", "emptyDir": {"medium": "Memory"}}]
    if command:
        container["command"] = command
    if chosen.engine == "torch":  # Triton reads the exported model from a volume the user fills
        container["volumeMounts"].append({"name": "models", "mountPath": "/models", "readOnly": True})
        volumes.append({"name": "models", "persistentVolumeClaim": {"claimName": f"{name}-models"}})
    usable = plan.rate_per_replica * (1 - plan.headroom)
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": labels,
                     "annotations": {"sizeup/plan": chosen.label, "sizeup/node": where} | (
                         {"sizeup/models": f"export the model (ONNX or TorchScript) into a Triton model repository on "
                                           f"the PersistentVolumeClaim {name}-models"}
                         if chosen.engine == "torch" else {})},
        "spec": {"replicas": plan.with_redundancy, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"nodeSelector": selector, "containers": [container],
                                       "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                                        "effect": "NoSchedule"}],
                                       "volumes": volumes}}}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "labels": labels},
               "spec": {"selector": labels, "ports": [{"name": "http", "port": port, "targetPort": "http"}]}}
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": name, "labels": labels, "annotations": {
               "sizeup/metric": f"{_METRIC}: requests per second per pod, served by a Prometheus adapter; scale out "
                                f"above {usable:.4g} req/s per replica ({1 - plan.headroom:.0%} of "
                                f"{plan.rate_per_replica:.4g} req/s at the SLA)"}},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                    "minReplicas": plan.at_base, "maxReplicas": plan.with_redundancy,
                    "metrics": [{"type": "Pods", "pods": {
                        "metric": {"name": _METRIC},
                        "target": {"type": "AverageValue", "averageValue": f"{max(1, round(usable * 1000))}m"}}}]}}
    spare = plan.with_redundancy - plan.for_load
    if spare <= 0:  # no spare replica (owned hardware without redundancy asked): nothing may be disrupted safely
        return [deployment, service, hpa]
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "labels": labels},
           "spec": {"maxUnavailable": spare, "selector": {"matchLabels": labels}}}
    return [deployment, service, hpa, pdb]


def _job(result, chosen) -> list[dict[str, Any]]:
    name = _name(result.scenario.name)
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "sizeup"}
    selector, where = _node_selector(chosen)
    per_node = chosen.offer.gpu_count if chosen.offer is not None else chosen.gpus
    nodes = -(-chosen.gpus // max(1, per_node))
    job = result.scenario.job
    spec: dict[str, Any] = {
        "completions": nodes, "parallelism": nodes, "completionMode": "Indexed", "backoffLimit": 3,
        "template": {"metadata": {"labels": labels}, "spec": {
            "restartPolicy": "Never", "nodeSelector": selector,
            "containers": [{"name": "train", "image": "nvcr.io/nvidia/pytorch:24.08-py3",
                            "command": ["sh", "-c", 'exec $TRAIN_COMMAND'],
                            "env": [{"name": "TRAIN_COMMAND", "value": "torchrun train.py"},
                                    {"name": "SIZEUP_METHOD", "value": job.method if job else ""},
                                    {"name": "MODEL", "value": _hf_id(result.scenario.model)}],
                            "resources": {"limits": {"nvidia.com/gpu": min(chosen.gpus, per_node)},
                                          "requests": {"nvidia.com/gpu": min(chosen.gpus, per_node)}}}]}}}
    if job is not None and job.deadline_hours:
        spec["activeDeadlineSeconds"] = int(job.deadline_hours * 3600)
    return [{"apiVersion": "batch/v1", "kind": "Job",
             "metadata": {"name": name, "labels": labels, "annotations": {
                 "sizeup/plan": chosen.label, "sizeup/node": where,
                 "sizeup/hours": f"{chosen.latency.get('hours', 0):.3g}",
                 "sizeup/note": "set TRAIN_COMMAND to your training entry point (the plan sizes the job, not the code)"}},
             "spec": spec}]


def manifests(result) -> list[dict[str, Any]]:
    """The Kubernetes objects of a plan; ConfigError (one line) when there is nothing to deploy."""
    chosen = result.chosen
    task = result.scenario.task
    if chosen is None:
        raise ConfigError("--deploy: no configuration meets the scenario, so there is nothing to deploy")
    if task == "edge":
        raise ConfigError(f"--deploy: {chosen.device.name} is an edge device without Kubernetes; nothing written "
                          f"(run {chosen.engine} on the device with the {chosen.quant} weights)")
    if task in ("finetune", "pretrain"):
        return _job(result, chosen)
    if chosen.replicas is None or result.scenario.traffic is None:
        raise ConfigError(f"--deploy: the {task} plan has no replicas to deploy")
    if task == "vision" and chosen.engine not in IMAGES:  # a torch / ONNX Runtime / TensorRT runtime: Triton serves it
        from dataclasses import replace

        chosen = replace(chosen, engine="torch")
    if chosen.engine not in IMAGES:
        raise ConfigError(f"--deploy: engine {chosen.engine!r} has no server image to deploy; expected one of "
                          f"{', '.join(IMAGES)}")
    return _serving(result, chosen)


def write_deploy(result, directory: str) -> list[Path]:
    """Write one YAML file per object into `directory` (created); the paths written."""
    import yaml

    class _Plain(yaml.SafeDumper):  # no &id anchors: each manifest reads on its own
        def ignore_aliases(self, data):
            return True

    from sizeup.escape import terminal_line
    from sizeup.files import write_file

    objects = manifests(result)
    out = Path(directory)
    try:
        out.mkdir(parents=True, exist_ok=True)
        paths = []
        for obj in objects:
            path = out / f"{obj['kind'].lower()}.yaml"
            write_file(path, f"# {obj['kind']} written by sizeup from the plan of {terminal_line(result.scenario.name)}\n"
                       + yaml.dump(obj, Dumper=_Plain, sort_keys=False), what="--deploy", error=ConfigError)
            paths.append(path)
    except OSError as e:
        raise ConfigError(f"--deploy {directory!r}: cannot write ({e.strerror})") from None
    return paths
