"""vLLM's profiling-run peak: the dummy sampler phase beside the forward step, and `vllm serve`'s batch defaults by
GPU (vllm/engine/arg_utils.py get_batch_defaults; vllm/v1/worker/gpu_model_runner.py profile_run and
_dummy_sampler_run; vllm/v1/sample/sampler.py and ops/topk_topp_sampler.py: commits in engines/vllm.py)."""

import pytest

from sizeup.engines import resolve
from sizeup.errors import ConfigError
from sizeup.engines.profile import engine_profile
from sizeup.engines.vllm import (SAMPLER_BYTES_PER_LOGIT, SAMPLER_MASK_BYTES, SAMPLER_SORT_BYTES, vllm_batch_defaults,
                                 vllm_sampler_peak)
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model
from sizeup.price.memory import MemoryConfig, inference_memory
from sizeup.units import GIB
from sizeup.workload.quantize import get_format

CATALOG = load_catalog(include_user=False)
LLAMA = load_model("llama-3.1-8b")
VLLM = engine_profile("vllm")


def _memory(device, arch=LLAMA, tp=1, context=1024):
    return inference_memory(arch, resolve("vllm", CATALOG.device(device)), MemoryConfig(
        batch=1, context=context, prompt=512, weights=get_format("bf16"), tp=tp))


@pytest.mark.parametrize("device, expected", [
    ("h100-sxm-80gb", (8192, 1024)), ("h200-sxm-141gb", (8192, 1024)), ("b200", (8192, 1024)),
    ("a100-sxm-80gb", (2048, 256)),  # >= 70 GiB but excluded by name (vLLM PR #17885)
    ("a100-sxm-40gb", (2048, 256)), ("rtx-4090", (2048, 256)),
])
def test_vllm_serve_defaults_follow_the_gpu(device, expected):
    step, seqs, why = vllm_batch_defaults(VLLM, CATALOG.device(device))
    assert (step, seqs) == expected and "vllm serve" in why


def test_an_explicit_setting_overrides_the_tier():
    settings = {"max_num_batched_tokens": 4096, "max_num_seqs": 64}
    assert vllm_batch_defaults(VLLM.with_settings(settings), CATALOG.device("h100"))[:2] == (4096, 64)
    batching = resolve("vllm", CATALOG.device("h100"), settings=settings).batching
    assert (batching.max_batched_tokens, batching.max_sequences) == (4096, 64)
    assert batching.scheduling == "continuous" and batching.chunked_prefill


def test_sampler_peak_per_logit_from_the_sampler_code():
    # while sorting: fp32 copy (4) + sorted values (4) + int64 indices (8) + PyTorch's int64 reverse indices (8) +
    # cub's third key (4) and value (8) buffers = 36; after it: fp32 copy, sorted values and indices, top-k mask (1),
    # sorted softmax (4), top-p mask (1), scatter output (4) = 26; beside the bf16 logits (2)
    assert (SAMPLER_SORT_BYTES, SAMPLER_MASK_BYTES, SAMPLER_BYTES_PER_LOGIT) == (36, 26, 36)
    assert vllm_sampler_peak(LLAMA, 1024, 2) == 1024 * 128_256 * 38
    assert vllm_sampler_peak(LLAMA, 1024, 2) / GIB == pytest.approx(4.64, abs=0.01)


def test_the_sampler_phase_sets_the_peak_for_a_big_vocabulary_at_1024_rows():
    h100, a100 = _memory("h100"), _memory("a100-sxm-80gb")
    kept = (8192 + 2 * 1024) * LLAMA.hidden * 2  # the step's hidden states and the sampled rows stay alive
    assert h100.activations_bytes == vllm_sampler_peak(LLAMA, 1024, 2) + kept
    # the A100 tier: 256 rows and a 2048-token step, a quarter of the sampler's logits
    assert a100.activations_bytes < h100.activations_bytes / 3
    assert any("sampler" in n and "is the peak" in n for n in h100.notes)


def test_tensor_parallelism_does_not_split_the_sampler():
    one, two = _memory("h100"), _memory("h100", tp=2)
    assert two.activations_bytes >= vllm_sampler_peak(LLAMA, 1024, 2)
    assert two.activations_bytes == one.activations_bytes  # every rank samples over the whole vocabulary


def test_concurrency_is_capped_at_the_gpus_max_num_seqs():
    h100, a100 = _memory("h100"), _memory("a100-sxm-80gb")
    assert 256 < h100.max_concurrent_sequences <= 1024  # ~50 GiB of pool / 128 MiB a 1,024-token sequence
    assert a100.max_concurrent_sequences == 256


# --- tensor parallelism: vLLM's custom all-reduce and the Ray workers of the 0.2 releases (VLLM.tensor_parallel) ---

def test_custom_all_reduce_runs_on_nvlink_and_on_two_pcie_gpus_from_0_3():
    """vllm/distributed/device_communicators/custom_all_reduce.py: world sizes 2/4/6/8, full NVLink or at most two
    PCIe GPUs with P2P (PR #2192, first in 0.3); GeForce boards have no P2P."""
    custom = VLLM.range("custom_all_reduce_latency_s")
    h100 = resolve("vllm", CATALOG.device("h100-sxm-80gb")).tensor_parallel("nvlink", 8)
    assert h100.all_reduce_latency_s == custom and h100.step_host_s is None
    a100 = resolve("vllm", CATALOG.device("a100-pcie-80gb"))
    assert a100.tensor_parallel("pcie", 2).all_reduce_latency_s == custom
    assert a100.tensor_parallel("pcie", 4).all_reduce_latency_s is None  # "not supported on more than two PCIe-only
    # GPUs": NCCL
    geforce = resolve("vllm", CATALOG.device("rtx-4090")).tensor_parallel("pcie", 2)
    assert geforce.all_reduce_latency_s is None and "P2P" not in geforce.notes[0] and "peer" in geforce.notes[0]
    assert resolve("vllm", CATALOG.device("h100-sxm-80gb")).tensor_parallel("nvlink", 3).all_reduce_latency_s is None


def test_vllm_0_2_drives_a_ray_actor_per_gpu_each_step_and_runs_nccl():
    """Before PR #2221 every GPU's worker was a Ray actor called each step (ray_worker_call_s per GPU)."""
    old = resolve("vllm@0.2.0", CATALOG.device("a100-pcie-80gb"))
    call = old.profile.range("ray_worker_call_s")
    for gpus in (2, 8):
        tp = old.tensor_parallel("pcie", gpus)
        assert tp.all_reduce_latency_s is None and tp.all_reduce == "NCCL"
        assert tp.step_host_s.typical == pytest.approx(gpus * call.typical)


def test_an_estimate_prices_the_engines_all_reduce():
    """The same 70B decode on 2 H100s costs less communication with vLLM's custom all-reduce (current release) than
    with NCCL's ring (0.2, which also pays its Ray calls): the engine, not price/, picks the collective."""
    from sizeup.workload.inference import InferenceConfig, estimate_inference

    arch, dev = load_model("llama-2-70b"), CATALOG.device("h100-sxm-80gb")
    notes = {}
    for spec in ("vllm", "vllm@0.2.0"):
        cfg = InferenceConfig(batch=1, prompt=8, output=16, weights="fp16", gpus=2, engine=spec)
        notes[spec] = " ".join(estimate_inference(arch, dev, cfg).assumptions)
    assert "custom all-reduce" in notes["vllm"] and "Ray actor" not in notes["vllm"]
    assert "Ray actor" in notes["vllm@0.2.0"] and "custom all-reduce" not in notes["vllm@0.2.0"]


@pytest.mark.parametrize("settings, step", [
    ({"max_model_len": 2048}, 2048), ({"max_model_len": 4096}, 4096), ({"max_model_len": 1024}, 2048), ({}, None),
    ({"max_model_len": 4096, "max_num_batched_tokens": 8192}, 8192),
])
def test_v0_prompt_steps_take_max_model_len_or_2048_tokens(settings, step):
    """vllm/config.py SchedulerConfig (V0, chunked prefill off): max_num_batched_tokens = max(max_model_len, 2048);
    without --max-model-len the model's own context, which any prompt fits (whole prompts)."""
    batching = resolve("vllm@0.5.4", CATALOG.device("h100"), settings=settings).batching
    assert batching.max_batched_tokens == step and batching.max_sequences == 256
    assert not batching.chunked_prefill and not batching.mixes


@pytest.mark.parametrize("device", ["tesla-p40", "apple-m2"])
def test_vllm_refuses_a_gpu_it_has_no_build_for(device):
    """vLLM's CUDA build needs compute capability 7.0 (docs.vllm.ai GPU installation), and it runs no Apple GPU:
    the estimate refuses in one line naming the device and what vLLM runs on, instead of pricing a run that cannot
    happen."""
    from sizeup.api import estimate

    with pytest.raises(ConfigError, match=rf"--engine vllm on {device}: vLLM runs NVIDIA GPUs of compute capability 7.0"):
        estimate("llama-3.1-8b", device=device, engine="vllm")


@pytest.mark.parametrize("device", ["jetson-agx-orin-64gb", "arc-pro-b60", "apple-m2-cpu", "mi300x"])
def test_vllm_still_prices_the_platforms_it_runs(device):
    from sizeup.api import estimate

    assert estimate("llama-3.1-8b", device=device, engine="vllm").to_dict()["decode"]["tokens_per_s"]["typical"] > 0
