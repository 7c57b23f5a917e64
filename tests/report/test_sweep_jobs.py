"""`sizeup sweep SPEC --emit k8s|slurm`: the Indexed Jobs validate offline against the Kubernetes schemas that
ship with kubernetes-validate and carry Kueue's queue label, GPU requests and product selectors; the Slurm
arrays carry one point per task id; and a task's own command, run here as the cluster would run it, writes its
run into the store named by SIZEUP_DB with the node as its host."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sizeup.cli.main import main
from sizeup.errors import ConfigError
from sizeup.measure.sweep_spec import load_sweep_spec, parse_sweep_spec
from sizeup.report.sweep_jobs import k8s_jobs, slurm_scripts

kubernetes_validate = pytest.importorskip("kubernetes_validate")
yaml = pytest.importorskip("yaml")
K8S_VERSION = "1.33.0"
SRC = str(Path(__file__).resolve().parents[2] / "src")

SPEC = """\
name: llama-decode
image: ghcr.io/acme/sizeup:0.1.0
queue: team-gpus
namespace: bench
slurm: {partition: gpu, time: "01:00:00", constraints: {h100: h100}}
measure: {target: llama-3.2-1b, dtype: bf16, budget: 600s}
points:
  - {device: h100, batch: "1,2,4,8"}
  - {device: h100, batch: "16,32", prompt: 2048}
  - {device: a100-80g, batch: "1,2,4", gpu_product: NVIDIA A100-SXM4-80GB}
  - {device: h100, gpus: 8, collectives: true}
"""


def spec(text=SPEC):
    return parse_sweep_spec(yaml.safe_load(text))


def test_indexed_jobs_validate_and_carry_queue_gpus_and_products():
    jobs = k8s_jobs(spec())
    assert [j["metadata"]["name"] for j in jobs] == ["llama-decode-h100-sxm-80gb", "llama-decode-a100-sxm-80gb",
                                                      "llama-decode-h100-sxm-80gb-8gpu"]
    for job in jobs:
        kubernetes_validate.validate(job, K8S_VERSION, strict=True)
        assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-gpus"
        assert job["spec"]["completionMode"] == "Indexed" and job["spec"]["suspend"] is True
        pod = job["spec"]["template"]["spec"]
        env = {e["name"]: e["valueFrom"] for e in pod["containers"][0]["env"]}
        assert env["SIZEUP_DB"]["secretKeyRef"] == {"name": "sizeup-db", "key": "url"}
        assert env["SIZEUP_HOST"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    h100, a100, multi = jobs
    assert h100["spec"]["completions"] == 2 and a100["spec"]["completions"] == 1
    assert h100["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1}
    assert multi["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] == {"nvidia.com/gpu": 8}
    assert a100["spec"]["template"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
    script = h100["spec"]["template"]["spec"]["containers"][0]["command"][2]
    assert '1) exec sizeup measure llama-3.2-1b --batch 16,32 --budget 600s --dtype bf16 --prompt 2048 --device ' \
           'cuda --db "$SIZEUP_DB" --json' in script
    multi_script = multi["spec"]["template"]["spec"]["containers"][0]["command"][2]
    assert "torchrun --standalone --nproc-per-node=8 -m sizeup measure" in multi_script
    assert "--collectives" in multi_script and "llama-3.2-1b" not in multi_script


def test_slurm_arrays_one_task_per_point():
    scripts = slurm_scripts(spec())
    h100 = scripts["llama-decode-h100-sxm-80gb.sbatch"]
    assert "#SBATCH --array=0-1" in h100 and "#SBATCH --gres=gpu:1" in h100 and "#SBATCH --constraint=h100" in h100
    assert "#SBATCH --partition=gpu" in h100 and 'SIZEUP_HOST="${SLURMD_NODENAME:-$(hostname)}"' in h100
    assert "#SBATCH --gres=gpu:8" in scripts["llama-decode-h100-sxm-80gb-8gpu.sbatch"]
    assert "--constraint" not in scripts["llama-decode-a100-sxm-80gb.sbatch"]
    result = subprocess.run(["bash", "-n"], input=h100, text=True, capture_output=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("text, message", [
    ("name: x\npoints: []\n", "at least one sweep point"),
    ("name: X_1\npoints: [{device: cpu}]\n", "lowercase letters"),
    ("name: x\nmeasure: {target: m, batchs: '1'}\npoints: [{device: cpu}]\n", "unknown key 'batchs'"),
    ("name: x\nmeasure: {target: m}\npoints: [{device: h100, gpus: 2}]\n", "a model sweep runs on one device"),
    ("name: x\nmeasure: {target: m}\npoints: [{device: cpu, gpus: 1}]\n", "none on the cpu"),
    ("name: x\nmeasure: {target: m}\npoints: [{device: h1000}]\n", "device 'h1000'"),
    ("name: x\nmeasure: {target: m}\npoints: [{device: epyc-9654}]\n", "not a GPU"),
    ("name: x\npoints: [{device: cpu}]\n", "no target to measure"),
    ("name: x\nmeasure: {target: m, threads: yes}\npoints: [{device: cpu}]\n", "is not a int"),
    ("name: x\nmeasure: {target: m, threads: -1}\npoints: [{device: cpu}]\n", "threads: -1 is not a count from 1"),
    ("name: x\nmeasure: {target: m, prompt: 0}\npoints: [{device: cpu}]\n", "prompt: 0 is not a count from 1"),
    ("name: x\nmeasure: {target: m}\nslurm: {partition: \"gpu --chdir=/\"}\npoints: [{device: cpu}]\n",
     "partition 'gpu --chdir=/': expected one word"),  # an #SBATCH line reads every word as an option
])
def test_bad_specs_are_refused_in_one_line(text, message):
    with pytest.raises(ConfigError, match=message) as info:
        spec(text)
    assert "\n" not in str(info.value)


def test_duplicate_keys_and_k8s_without_an_image_are_refused(tmp_path, capsys):
    dup = tmp_path / "dup.yaml"
    dup.write_text("name: x\nname: y\nmeasure: {target: m}\npoints: [{device: cpu}]\n")
    with pytest.raises(ConfigError, match="key 'name' is given twice"):
        load_sweep_spec(dup)
    plain = tmp_path / "plain.yaml"
    plain.write_text("name: x\nmeasure: {target: m}\npoints: [{device: cpu}, {device: h100}]\n")
    assert main(["sweep", str(plain), "--emit", "k8s"]) == 1
    assert "needs image:" in capsys.readouterr().err
    assert main(["sweep", str(plain), "--emit", "slurm"]) == 1
    assert "give --out DIR" in capsys.readouterr().err


BENCH = {"device": "cpu", "dtype": "fp32", "gemm": [], "matmul_flops_per_s": 1e11, "copy_bytes_per_s": 1e10,
         "measured": "2026-12-04 12:00:00", "catalog_id": None}


@pytest.mark.parametrize("emit", ["slurm", "k8s"])
def test_a_task_runs_here_as_the_cluster_runs_it(tmp_path, emit):
    """The task's own command (the Slurm script, the Job's container command) with the variables the scheduler
    sets: its run lands in the store SIZEUP_DB names, with the node as its host."""
    pytest.importorskip("torch")
    from sizeup.measure.calibrate import local_device, profile_to_dict
    from sizeup.store import Store

    db = tmp_path / "runs.sqlite"
    with Store(db) as store:  # the measured peaks saved: the task goes straight to its sweep
        store.save_calibration("local", device="cpu", source_runs=[],
                               profile=profile_to_dict(local_device(BENCH), None, None, BENCH, []))
    text = (f"name: tiny\nimage: sizeup:test\ncommand: {sys.executable} -m sizeup\n"
            "measure: {target: 'sizeup.examples.zoo:mlp_conv_net', input: 1x3x32x32, budget: 30s}\n"
            "points:\n  - {device: cpu, batch: '1'}\n  - {device: cpu, batch: '1,2'}\n")
    env = {**os.environ, "PYTHONPATH": SRC, "SIZEUP_DB": str(db)}
    if emit == "slurm":
        script = slurm_scripts(spec(text))["tiny-cpu.sbatch"]
        argv, env = ["bash", "-c", script], {**env, "SLURM_ARRAY_TASK_ID": "1", "SLURMD_NODENAME": "gpu-node-7"}
    else:
        [job] = k8s_jobs(spec(text))
        argv = job["spec"]["template"]["spec"]["containers"][0]["command"]
        env = {**env, "JOB_COMPLETION_INDEX": "1", "SIZEUP_HOST": "gpu-node-7"}  # the downward API's node name
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    run_id = json.loads(done.stdout)["run_id"]
    with Store(db, readonly=True) as store:
        run = store.run(run_id)
        assert [p.batch for p in run.points] == [1, 2] and run.provenance.host == "gpu-node-7"
        assert run.provenance.workload_class == "traced" and run.provenance.engine == "torch"  # MLP FLOPs lead
