"""Kubernetes manifests that carry a plan out (`sizeup plan … --deploy DIR`).

Serving plans: a Deployment of the chosen engine's server — the line its own file gives
(`ExecutionModel.launch`, engines/launch.py: vLLM, SGLang, TensorRT-LLM's `trtllm-serve`, the llama.cpp server),
or for a request/response model planned on a runtime (vision) Triton Inference Server reading a model repository
from a PersistentVolumeClaim — from a pinned image or the tag of the release the plan priced (data/plan/serving.yaml,
never `latest`), on the
checkpoint that matches the planned weight format (an AWQ repository for awq-int4, a GGUF file for llama.cpp;
a placeholder the user must fill, said in an annotation, when none is listed), with the flags the plan implies
(plan.serving_files.server: tensor parallel size, maximum model length, GPU memory share, maximum
concurrent sequences, weight format), `nvidia.com/gpu` requests, a node selector, /health probes; a Service;
an autoscaling/v2 HPA from the fleet's floor (the quietest hour of the month) to its peak with N+1, on the
server's own request metric; the prometheus-adapter rule that turns that metric into the HPA's per-pod
custom metric (a ConfigMap); a PodDisruptionBudget that lets only the spare replica go at a time.
Fine-tune / pre-train plans: an Indexed Job over the placement's instances with the GPUs, the deadline as
activeDeadlineSeconds. Edge devices run no Kubernetes: refused in one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sizeup.errors import ConfigError
from sizeup.plan.serving_files import hf_id, image, metric, server

__all__ = ["manifests", "write_deploy", "adapter_rule"]

"""Images whose entrypoint is the server itself (the llama.cpp server image runs llama-server)."""


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


def _serving(result, chosen) -> list[dict[str, Any]]:
    plan = chosen.replicas
    name = _name(result.scenario.name)
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "sizeup"}
    selector, where = _node_selector(chosen)
    launch, ckpt = server(result, chosen)
    port = launch.port
    ready, live = launch.health
    container: dict[str, Any] = {
        "name": chosen.engine.replace(".", "-"), "image": image(chosen.engine, launch.release), "args": list(launch.args),
        "ports": [{"name": "http", "containerPort": port}],
        "resources": {"limits": {"nvidia.com/gpu": chosen.gpus}, "requests": {"nvidia.com/gpu": chosen.gpus}},
        "readinessProbe": {"httpGet": {"path": ready, "port": port}, "periodSeconds": 10, "initialDelaySeconds": 30,
                           "failureThreshold": 3},
        "livenessProbe": {"httpGet": {"path": live, "port": port}, "periodSeconds": 10, "initialDelaySeconds": 600,
                          "failureThreshold": 6},
        "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}]}
    volumes: list[dict[str, Any]] = [{"name": "shm", "emptyDir": {"medium": "Memory"}}]
    if not launch.entrypoint:
        container["command"] = list(launch.command)
    if launch.metrics_port:
        container["ports"].append({"name": "metrics", "containerPort": launch.metrics_port})
    if chosen.engine == "torch":  # Triton reads the exported model from a volume the user fills
        container["volumeMounts"].append({"name": "models", "mountPath": "/models", "readOnly": True})
        volumes.append({"name": "models", "persistentVolumeClaim": {"claimName": f"{name}-models"}})
    usable = plan.rate_per_replica * (1 - plan.headroom)
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": labels,
                     "annotations": {"sizeup/plan": chosen.label, "sizeup/node": where} | (
                         {"sizeup/checkpoint": f"FILL IN before applying: {ckpt.note}"} if ckpt.placeholder else
                         {"sizeup/checkpoint": f"{ckpt.ref}" + (f" ({ckpt.note})" if ckpt.note else "")}) | (
                         {"sizeup/models": f"export the model (ONNX or TorchScript) into a Triton model repository on "
                                           f"the PersistentVolumeClaim {name}-models"}
                         if chosen.engine == "torch" else {})},
        "spec": {"replicas": plan.with_redundancy, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels, "annotations": {
                     "prometheus.io/scrape": "true", "prometheus.io/path": "/metrics",
                     "prometheus.io/port": str(launch.metrics_port or port)}},
                              "spec": {"nodeSelector": selector, "containers": [container],
                                       "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                                        "effect": "NoSchedule"}],
                                       "volumes": volumes}}}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "labels": labels},
               "spec": {"selector": labels, "ports": [{"name": "http", "port": port, "targetPort": "http"}]}}
    objects: list[dict[str, Any]] = [deployment, service]
    objects += _autoscaling(result, chosen, name, labels, usable)
    spare = plan.with_redundancy - plan.for_load
    if spare <= 0:  # no spare replica (owned hardware without redundancy asked): nothing may be disrupted safely
        return objects
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "labels": labels},
           "spec": {"maxUnavailable": spare, "selector": {"matchLabels": labels}}}
    return objects + [pdb]


def adapter_rule(engine: str, metric_name: str) -> dict[str, Any] | None:
    """The prometheus-adapter rule exposing `engine`'s request metric per pod as `metric_name`."""
    series = metric(engine)
    if series is None:
        return None
    query = ("sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)" if series["kind"] == "rate" else
             "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)")
    return {"seriesQuery": f'{series["series"]}{{namespace!="",pod!=""}}',
            "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
            "name": {"matches": f"^{series['series']}$", "as": metric_name}, "metricsQuery": query}


def _autoscaling(result, chosen, name: str, labels: dict[str, str], usable: float) -> list[dict[str, Any]]:
    """The HPA on the server's own request metric, and the prometheus-adapter rule that serves it; none when
    the server exports no request metric sizeup knows (then the replicas stay at the plan's peak)."""
    import yaml

    plan = chosen.replicas
    series = metric(chosen.engine)
    if series is None:
        return []
    metric_name = f"{name.replace('-', '_')}_requests_per_second" if series["kind"] == "rate" else \
        f"{name.replace('-', '_')}_requests_in_flight"
    if series["kind"] == "rate":
        target, what = usable, f"{usable:.4g} req/s per replica"
    else:  # Little's law: requests in the server = rate × mean time in it, at the scale-out rate
        e2e = chosen.simulation.e2e["mean"] if chosen.simulation is not None else 0.0
        target, what = usable * e2e, (f"{usable * e2e:.4g} requests in flight per replica ({usable:.4g} req/s × "
                                      f"{e2e:.3g} s mean end-to-end, Little's law)")
    rule = adapter_rule(chosen.engine, metric_name)
    config = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": f"{name}-adapter-rules", "labels": labels, "annotations": {
                  "sizeup/adapter": "merge `rules` into prometheus-adapter's config (Helm value `rules.custom`); "
                                    f"it serves {metric_name} from {series['series']} ({series['source']})"}},
              "data": {"config.yaml": yaml.safe_dump({"rules": [rule]}, sort_keys=False)}}
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": name, "labels": labels, "annotations": {
               "sizeup/metric": f"{metric_name}: served by prometheus-adapter with the rule in {name}-adapter-rules; "
                                f"scale out above {what} ({1 - plan.headroom:.0%} of {plan.rate_per_replica:.4g} "
                                "req/s at the SLA)"}},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                    "minReplicas": chosen.detail.get("floor_replicas", plan.at_base),
                    "maxReplicas": plan.with_redundancy,
                    "metrics": [{"type": "Pods", "pods": {
                        "metric": {"name": metric_name},
                        "target": {"type": "AverageValue", "averageValue": f"{max(1, round(target * 1000))}m"}}}]}}
    return [hpa, config]


def _job(result, chosen) -> list[dict[str, Any]]:
    name = _name(result.scenario.name)
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "sizeup"}
    selector, where = _node_selector(chosen)
    per_node = chosen.offer.gpu_count if chosen.offer is not None else chosen.gpus
    nodes = -(-chosen.gpus // max(1, per_node))
    job = result.scenario.job
    from sizeup.plan.recipe import job_layout

    layout = job_layout(chosen)
    command = layout[1] if layout else "torchrun YOUR_TRAIN_SCRIPT"
    spec: dict[str, Any] = {
        "completions": nodes, "parallelism": nodes, "completionMode": "Indexed", "backoffLimit": 3,
        "template": {"metadata": {"labels": labels}, "spec": {
            "restartPolicy": "Never", "nodeSelector": selector,
            "containers": [{"name": "train", "image": image("train"),
                            "command": ["sh", "-c", 'eval "exec $TRAIN_COMMAND"'],  # eval: $JOB_COMPLETION_INDEX inside expands
                            "env": [{"name": "TRAIN_COMMAND", "value": command.replace(
                                "YOUR_TRAIN_SCRIPT", "--node-rank $JOB_COMPLETION_INDEX YOUR_TRAIN_SCRIPT")},
                                    {"name": "SIZEUP_METHOD", "value": job.method if job else ""},
                                    {"name": "MODEL", "value": hf_id(result.scenario.model)}],
                            "resources": {"limits": {"nvidia.com/gpu": min(chosen.gpus, per_node)},
                                          "requests": {"nvidia.com/gpu": min(chosen.gpus, per_node)}}}]}}}
    if job is not None and job.deadline_hours:
        spec["activeDeadlineSeconds"] = int(job.deadline_hours * 3600)
    return [{"apiVersion": "batch/v1", "kind": "Job",
             "metadata": {"name": name, "labels": labels, "annotations": {
                 "sizeup/plan": chosen.label, "sizeup/node": where,
                 "sizeup/hours": f"{chosen.latency.get('hours', 0):.3g}",
                 "sizeup/layout": layout[0] if layout else "",
                 "sizeup/note": "replace YOUR_TRAIN_SCRIPT in TRAIN_COMMAND with your training entry point, run with the "
                                "layout above (the plan sizes the job, not the code)"}},
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
    if task == "vision":  # a torch / ONNX Runtime / TensorRT runtime: Triton serves it
        from dataclasses import replace

        chosen = replace(chosen, engine="torch")
    image(chosen.engine, chosen.engine_version)  # refused in one line when the engine has no server image
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
