"""`--deploy` manifests: each serving example's objects validate against the Kubernetes schemas that
ship with kubernetes-validate (offline), their HPA range is the sheet's, the engine flags are the
plan's; the fine-tune writes a Job and the edge device is refused in one line."""

from functools import lru_cache
from pathlib import Path

import pytest

from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.plan.recommend import plan_scenario
from sizeup.plan.scenario import load_scenario
from sizeup.plan.sheet import build_sheet
from sizeup.report.deploy import manifests, write_deploy

kubernetes_validate = pytest.importorskip("kubernetes_validate")
yaml = pytest.importorskip("yaml")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
K8S_VERSION = "1.33.0"
"""A version whose schemas kubernetes-validate bundles (checked below, so no download is attempted)."""
SERVING = ["team-api-200-users", "api-70b-p99-ttft", "personal-7b-chat", "vision-inspection"]


@lru_cache(maxsize=None)
def _plan(name):
    if name == "vision-inspection":
        pytest.importorskip("torch")  # the model is traced
    return plan_scenario(load_scenario(EXAMPLES / f"{name}.yaml"), load_catalog(include_user=False))


def _validate(obj):
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_the_schema_version_is_bundled():
    from kubernetes_validate.utils import all_versions

    assert K8S_VERSION in all_versions()
    bundled = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    assert (bundled / f"v{K8S_VERSION}-local-strict").is_dir()  # the schemas are on disk: no network


def _sheet_cell(result, key):
    for section in build_sheet(result).sections:
        for cell in section.cells:
            if cell.key == key:
                return cell.value
    raise KeyError(key)


@pytest.mark.parametrize("name", SERVING)
def test_serving_manifests_validate_and_carry_the_sheet(name, tmp_path):
    result = _plan(name)
    paths = write_deploy(result, str(tmp_path / "k8s"))
    objects = [yaml.safe_load(p.read_text()) for p in paths]
    assert all(p.read_text().strip() for p in paths)
    kinds = {o["kind"]: o for o in objects}
    spare = result.chosen.replicas.with_redundancy - result.chosen.replicas.for_load
    assert set(kinds) == {"Deployment", "Service", "HorizontalPodAutoscaler", "ConfigMap"} | (
        {"PodDisruptionBudget"} if spare else set())
    for obj in objects:
        _validate(obj)
    hpa, plan, chosen = kinds["HorizontalPodAutoscaler"]["spec"], result.chosen.replicas, result.chosen
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (_sheet_cell(result, "replicas_floor"),
                                                       _sheet_cell(result, "replicas"))
    # the autoscaler's range is the fleet the cost was billed on: its quietest and busiest levels
    assert hpa["maxReplicas"] == plan.with_redundancy
    assert hpa["minReplicas"] == chosen.detail["floor_replicas"] <= hpa["maxReplicas"]
    target = hpa["metrics"][0]["pods"]["target"]["averageValue"]
    usable = plan.rate_per_replica * (1 - plan.headroom)
    if chosen.engine == "llama.cpp":  # requests in flight by Little's law at the scale-out rate
        assert int(target.rstrip("m")) == max(1, round(usable * chosen.simulation.e2e["mean"] * 1000))
    else:
        assert int(target.rstrip("m")) == round(usable * 1000)
    # the metric the HPA reads is served: the adapter rule names it, from the server's own series
    rules = yaml.safe_load(kinds["ConfigMap"]["data"]["config.yaml"])["rules"]
    assert rules[0]["name"]["as"] == hpa["metrics"][0]["pods"]["metric"]["name"]
    series = {"vllm": "vllm:request_success_total", "llama.cpp": "llamacpp:requests_processing"}.get(
        chosen.engine, "nv_inference_request_success")
    assert rules[0]["seriesQuery"].startswith(series)
    # pinned images, never latest; a checkpoint that matches the weight format
    image = pod_image = kinds["Deployment"]["spec"]["template"]["spec"]["containers"][0]["image"]
    assert ":" in image and not image.endswith(":latest") and not image.endswith(":server-cuda"), pod_image
    if spare:  # the PDB lets only the spare replica go at a time
        assert kinds["PodDisruptionBudget"]["spec"]["maxUnavailable"] == spare
    pod = kinds["Deployment"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == chosen.gpus
    triton = result.scenario.task == "vision"  # any vision runtime (pytorch-eager, tensorrt, ...) is served by Triton
    health = "/v2/health/" if triton else "/health"
    assert container["readinessProbe"]["httpGet"]["path"].startswith(health)
    assert container["livenessProbe"]["httpGet"]["path"].startswith(health)
    assert pod["nodeSelector"]
    args = container["args"]
    traffic = result.scenario.traffic
    max_len = traffic.prompt_p95_tokens + traffic.output_p95_tokens
    if chosen.engine == "vllm":
        assert container["image"].startswith("vllm/vllm-openai")
        assert args[args.index("--tensor-parallel-size") + 1] == str(chosen.gpus)
        assert args[args.index("--max-model-len") + 1] == str(max_len)
        assert args[args.index("--max-num-seqs") + 1] == str(chosen.max_batch)
        # never above the max_num_seqs the plan's memory profile sized the sampler for (vllm serve's GPU tier):
        # the server then profiles no more rows than planned, so its KV pool is at least the plan's
        from sizeup.engines.profile import engine_profile
        from sizeup.engines.vllm import vllm_batch_defaults

        assert chosen.max_batch <= vllm_batch_defaults(engine_profile("vllm"), chosen.device)[1]
        assert "--gpu-memory-utilization" in args
    elif triton:  # a vision model: Triton serves it from the model repository volume
        assert container["image"].startswith("nvcr.io/nvidia/tritonserver") and "--model-repository=/models" in args
        assert any(v.get("persistentVolumeClaim") for v in pod["volumes"])
    else:
        assert chosen.engine == "llama.cpp" and container["image"].startswith("ghcr.io/ggml-org/llama.cpp:server-cuda-b")
        assert "--metrics" in args
        assert args[args.index("--parallel") + 1] == str(chosen.max_batch)
        assert args[args.index("--ctx-size") + 1] == str(max_len * chosen.max_batch)


def test_finetune_writes_a_valid_job(tmp_path):
    result = _plan("team-lora-finetune")
    (job,) = manifests(result)
    assert job["kind"] == "Job"
    _validate(job)
    assert job["spec"]["activeDeadlineSeconds"] == 12 * 3600
    gpus = job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]
    assert gpus * job["spec"]["parallelism"] >= result.chosen.gpus


def test_edge_is_refused_in_one_line(tmp_path):
    result = _plan("jetson-edge")
    with pytest.raises(ConfigError, match="edge device without Kubernetes") as e:
        write_deploy(result, str(tmp_path / "k8s"))
    assert "\n" not in str(e.value)
    assert not (tmp_path / "k8s").exists()


def test_the_validator_rejects_a_broken_manifest():
    """The check above is not vacuous: a replica count written as text fails the HPA schema."""
    hpa = next(o for o in manifests(_plan("team-api-200-users")) if o["kind"] == "HorizontalPodAutoscaler")
    broken = {**hpa, "spec": {**hpa["spec"], "minReplicas": "one"}}
    with pytest.raises(kubernetes_validate.ValidationError):
        _validate(broken)


def test_tensorrt_llm_deployment_validates():
    from dataclasses import replace

    result = _plan("api-70b-p99-ttft")
    result = replace(result, chosen=replace(result.chosen, engine="tensorrt-llm"))
    objects = manifests(result)
    for obj in objects:
        _validate(obj)
    container = objects[0]["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["trtllm-serve"]
    assert {o["kind"] for o in objects} == {"Deployment", "Service", "PodDisruptionBudget"}  # no request metric known
    assert container["args"][container["args"].index("--tp_size") + 1] == str(result.chosen.gpus)


def test_cli_plan_deploy_writes_the_files(tmp_path, capsys):
    from sizeup.cli.main import main

    out = tmp_path / "k8s"
    code = main(["plan", str(EXAMPLES / "team-api-200-users.yaml"), "--deploy", str(out), "--format", "md"])
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["configmap.yaml", "deployment.yaml", "horizontalpodautoscaler.yaml",
                                                     "poddisruptionbudget.yaml", "service.yaml"]
    assert "wrote" in capsys.readouterr().err


def test_cli_plan_deploy_refuses_an_edge_plan(tmp_path, capsys):
    from sizeup.cli.main import main

    code = main(["plan", str(EXAMPLES / "jetson-edge.yaml"), "--deploy", str(tmp_path / "k8s")])
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1 and "without Kubernetes" in err


def test_a_vision_language_deploy_passes_the_images_its_memory_profile_assumed(tmp_path):
    """The plan keeps back vLLM's multimodal profile for the scenario's images per request at its image
    size (price/vllm_multimodal.py); the server must be told the same, or it profiles vLLM's default
    limit at the processor's largest image and leaves less for the KV cache than the plan sized."""
    import json

    config = Path(__file__).resolve().parents[1] / "ingest" / "configs" / "qwen2-vl-7b-instruct.json"
    path = tmp_path / "vl.yaml"
    path.write_text(yaml.safe_dump({
        "name": "vl-api", "model": str(config), "task": "api",
        "traffic": {"users": 20, "requests_per_user_per_hour": 6, "prompt_tokens": {"mean": 1200, "p95": 2000},
                    "output_tokens": {"mean": 200, "p95": 400}, "images_per_request": 2, "image_size": 448},
        "sla": {"ttft_p95_s": 2.0, "tpot_p95_s": 0.08},
        "constraints": {"devices": ["l40s", "h100"], "engines": ["vllm"], "quantizations": ["bf16"], "max_gpus": 1}}))
    result = plan_scenario(load_scenario(path), load_catalog(include_user=False))
    assert result.chosen.detail.get("multimodal_profile"), "the plan priced vLLM's multimodal profile"
    deployment = next(o for o in manifests(result) if o["kind"] == "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    limit = json.loads(args[args.index("--limit-mm-per-prompt") + 1])
    assert limit == {"image": {"count": 2, "width": 448, "height": 448}}
    _validate(deployment)


def test_a_text_model_deploy_has_no_multimodal_limit():
    args = next(o for o in manifests(_plan("team-api-200-users")) if o["kind"] == "Deployment")[
        "spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--limit-mm-per-prompt" not in args


def test_the_checkpoint_matches_the_weight_format():
    """Never a base checkpoint with --quantization awq: an AWQ repository, or a placeholder to fill."""
    from dataclasses import replace

    from sizeup.plan.serving_files import checkpoint, engine_command

    result = _plan("team-api-200-users")
    for quant, expect in (("awq-int4", "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4"),
                          ("bf16", "meta-llama/Llama-3.1-8B"), ("fp8", "meta-llama/Llama-3.1-8B")):
        chosen = replace(result.chosen, quant=quant)
        command, args, ckpt = engine_command(result, chosen)
        assert command == ["vllm", "serve"] and args[0] == expect and not ckpt.placeholder
    unknown = checkpoint("phi-2", "awq-int4", "vllm")
    assert unknown.placeholder and unknown.repo.startswith("<AWQ checkpoint of") and "fill in" in unknown.repo
    gguf = checkpoint("llama-3.1-70b", "q4_k_m", "llama.cpp")
    assert gguf.placeholder and "GGUF" in gguf.repo
    deployment = manifests(replace(result, chosen=replace(result.chosen, quant="gptq-int4")))[0]
    assert "hugging-quants/Meta-Llama-3.1-8B-Instruct-GPTQ-INT4" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]


def test_a_placeholder_checkpoint_is_said_in_the_deployment():
    from dataclasses import replace

    result = _plan("api-70b-p99-ttft")
    result = replace(result, chosen=replace(result.chosen, quant="gptq-int4"))
    deployment = manifests(result)[0]
    assert deployment["metadata"]["annotations"]["sizeup/checkpoint"].startswith("FILL IN")
    _validate(deployment)


def test_an_sglang_plan_deploys_its_server_with_metrics():
    """SGLang plans deploy (they used to be refused: no server image): sglang.launch_server on port 30000 from a pinned
    image, probes and scrape on that port, and an HPA on sglang:num_running_reqs (in flight, Little's law)."""
    from dataclasses import replace

    scenario = load_scenario(EXAMPLES / "team-api-200-users.yaml")
    scenario = replace(scenario, constraints=replace(scenario.constraints, engines=("sglang",), quantizations=("bf16",)))
    result = plan_scenario(scenario, load_catalog(include_user=False))
    assert result.chosen is not None and result.chosen.engine == "sglang"
    objects = manifests(result)
    for obj in objects:
        _validate(obj)
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"].startswith("lmsysorg/sglang:v0.5")
    assert container["command"] == ["python3", "-m", "sglang.launch_server"]
    assert container["ports"][0]["containerPort"] == 30000 and "--enable-metrics" in container["args"]
    assert deployment["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"] == "30000"
    hpa = next(o for o in objects if o["kind"] == "HorizontalPodAutoscaler")
    assert hpa["spec"]["metrics"][0]["pods"]["metric"]["name"].endswith("_requests_in_flight")


def test_the_vllm_image_is_the_release_the_plan_priced():
    result = _plan("team-api-200-users")
    container = manifests(result)[0]["spec"]["template"]["spec"]["containers"][0]
    version = result.chosen.engine_version
    assert version and container["image"] == "vllm/vllm-openai:v" + ".".join(
        (version.split(".") + ["0", "0"])[:3])
