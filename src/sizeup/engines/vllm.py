"""vLLM (data/engines/vllm.yaml): the V1 engine's pre-allocated KV pool, its start-up profiling run and its
batch defaults, CUDA graphs at decode and chunked prefill.

Memory: vLLM takes `gpu_memory_utilization` of the card's CUDA total up front; from it go the weights, the peak of
its profiling run (the larger of a `max_num_batched_tokens` forward step and the dummy sampler over `max_num_seqs`
rows of logits, `vllm serve`'s defaults for the GPU tier; for a vision-language model the largest dummy image batch
through the vision tower beside the encoder cache: engines/vllm_multimodal.py), non-torch and CUDA-graph memory; the
rest is the paged KV pool (blocks of 16). Time: a decode step replays a CUDA graph (`decode_overhead_s` per kernel)
and pays the scheduler's host time per step (`step_overhead_s`).

Releases (`vllm@0.10`): the data names what changed and when (data/engines/vllm.yaml `releases`): the V0 engine
before 0.8 (256 sequences, so its profiling run samples 256 rows; its own host time per step), CUDA-graph memory
outside the gpu_memory_utilization budget before 0.21, gpu_memory_utilization 0.9 on the releases read with it.

Platforms (`PLATFORMS`): vLLM runs CUDA on NVIDIA, ROCm (HIP) on AMD and XPU (SYCL: IPEX / vllm-xpu-kernels) on Intel
GPUs; `--backend` may name that platform, no other. Where it captures no graph (Intel XPU by default, or
`--engine-opt enforce-eager`) every kernel pays the device kind's eager launch time and no graph memory is held.

Tensor parallelism (`VLLM.tensor_parallel`): the custom all-reduce over CUDA-IPC peer memory from 0.3 where vLLM
takes it, NCCL's ring elsewhere; the 0.2 releases call each GPU's Ray worker once per step.
"""

from __future__ import annotations

from dataclasses import replace

from sizeup.engines.base import Batching, ExecutionModel, TensorParallel, engine
from sizeup.engines.kernels import Kernel
from sizeup.engines.launch import Launch, LaunchRequest, dtype_flag, images_flag
from sizeup.engines.peer_all_reduce import PeerAllReduce, peer_all_reduce
from sizeup.engines.reserve import InferenceMemory, MemoryRequest, device_total_bytes
from sizeup.engines.vllm_multimodal import vllm_multimodal_profile
from sizeup.hardware.schema import DeviceSpec
from sizeup.ingest.arch import ModelArch
from sizeup.engines.profile import EngineProfile
from sizeup.errors import ConfigError
from sizeup.ranges import Range
from sizeup.units import GIB

__all__ = ["VLLM", "vllm_batch_defaults", "vllm_sampler_peak", "SAMPLER_BYTES_PER_LOGIT", "PLATFORMS"]

PLATFORMS = {"nvidia": ("cuda", True), "amd": ("hip", True), "intel": ("sycl", False)}
"""The platform vLLM runs a GPU of each vendor on (as sizeup's --backend names it) and whether it replays graphs at
decode by default. CUDA graphs on CUDA, HIP graphs on ROCm (vllm/platforms/rocm.py keeps the CUDA-graph wrapper).
Intel XPU: no graph in vLLM 0.10 (the Intel vLLM Team's Arc Pro B-series post, vllm-project.github.io
_posts/2025-11-11-intel-arc-pro-b.md, serves with --enforce-eager), and in later releases XPU graphs are
experimental and off unless VLLM_XPU_ENABLE_XPU_GRAPH=1 (vllm/platforms/xpu.py XPUPlatform.check_and_update_config,
github.com/vllm-project/vllm commit 00540f9d72cb0f601cd9124792ba6469ee39bfb4; retrieved 2026-12-05). On XPU the
MXFP4 MoE runs IPEX's GatedMLPMOE(is_mxfp4=True): the packed weights are read and dequantized to bf16 inside the
kernel (vllm/model_executor/layers/quantization/mxfp4.py IpexMxfp4MoEMethod, commit
007d50058a06dec0f82472d63c819244d460c40d), which the pricing layer prices at the bf16 peak of a device that lists
no fp4 figure."""

PRE_VOLTA = ("pascal-gp100", "pascal-gp10x")
"""NVIDIA architectures below compute capability 7.0, which vLLM's CUDA build does not run ("GPU: compute capability
7.0 or higher", docs.vllm.ai/en/v0.14.0/getting_started/installation/gpu/, read 2026-12-05); a GPU of a vendor
without a vLLM platform (PLATFORMS: Apple's, whose Macs vLLM runs on the CPU only) is refused the same way."""


SAMPLER_SORT_BYTES = 4 + 4 + 8 + 8 + 4 + 8
"""Per logit while vLLM's dummy sampler sorts (beside the model-dtype logits): the Sampler's fp32 copy, the sort's fp32
values and int64 indices, PyTorch's int64 reverse-index input (SortStable.cu segmented_sort_pairs, taken for 128 or
more rows) and cub's third key and value buffers (DispatchSegmentedRadixSort, not overwriting its input)."""

SAMPLER_MASK_BYTES = 4 + 4 + 8 + 1 + 4 + 1 + 4
"""Per logit after the sort: the fp32 copy, sorted values and indices, the top-k bool mask, the fp32 softmax of the
sorted logits (cumsum in place), the top-p bool mask and the fp32 scatter back (apply_top_k_top_p)."""

SAMPLER_BYTES_PER_LOGIT = max(SAMPLER_SORT_BYTES, SAMPLER_MASK_BYTES)
"""vLLM's dummy sampler run at its peak, beside the model-dtype logits (`vllm_sampler_peak`). Sources:
vllm/v1/sample/sampler.py at 3e342658b2e9c85a30a54d19e64e5ad77b8a26a6, vllm/v1/sample/ops/topk_topp_sampler.py at
3babc05a035b42bb9d0ae51b83e102c85e3e5626 (github.com/vllm-project/vllm); aten/src/ATen/native/cuda/SortStable.cu
(github.com/pytorch/pytorch, launch_stable_sort_kernel and segmented_sort_pairs, commit
420d374dfeb7a2826c9101260e74d730304d1a73); cub/cub/device/dispatch/dispatch_segmented_radix_sort.cuh
(github.com/NVIDIA/cccl, "bytes needed for 3rd keys buffer" / "3rd values buffer", commit
004ad1986064aaa82892ed00d0dbda88b90fa6e6)."""


VLLM_ALL_REDUCE = PeerAllReduce(name="vLLM custom all-reduce")
"""vLLM's custom all-reduce: world sizes 2, 4, 6, 8 (custom_all_reduce.py _SUPPORTED_WORLD_SIZES), on two PCIe
GPUs as well as over NVLink."""

VLLM_QUANTIZATION = {"awq-int4": "awq", "gptq-int4": "gptq", "fp8": "fp8", "int8": "bitsandbytes", "nf4": "bitsandbytes"}
"""`vllm serve --quantization` of a planned weight format (vLLM engine args, `--quantization` choices)."""


def vllm_batch_defaults(profile: EngineProfile, device: DeviceSpec) -> tuple[int, int, str]:
    """(max_num_batched_tokens, max_num_seqs, why) vLLM starts with on `device`: the profile's explicit values where
    it sets them, else `vllm serve`'s defaults for the GPU (EngineArgs.get_batch_defaults, the OPENAI_API_SERVER
    usage context: sizeup's plans deploy the OpenAI server; the LLM class's, `.offline`, under --engine-opt
    offline): GPUs whose CUDA total is at least `default_large_gpu_min_gib` and whose name has no "a100" take the
    large tier, the others the small one."""
    gib = device_total_bytes(device) / GIB
    large = gib >= profile.value("default_large_gpu_min_gib", 70) and "a100" not in device.name.lower()
    tier = "large_gpu" if large else "other_gpu"
    offline = bool(profile.value("offline_frontend", 0))
    step = profile.values.get("max_num_batched_tokens")
    seqs = profile.values.get("max_num_seqs")
    default = profile.value(f"default_max_num_batched_tokens.{tier}", 8192 if large else 2048)
    step = int(step if step is not None else
               profile.value(f"default_max_num_batched_tokens.{tier}.offline", default) if offline else default)
    seqs = int(seqs if seqs is not None else profile.value(f"default_max_num_seqs.{tier}", 1024 if large else 256))
    why = (f"{'the offline LLM class' if offline else 'vllm serve'} defaults on a {gib:,.0f} GiB "
           f"{'GPU' if large else 'GPU (under 70 GiB or an A100)'}: max_num_batched_tokens {step:,}, "
           f"max_num_seqs {seqs:,}")
    return step, seqs, why


def vllm_sampler_peak(arch: ModelArch, rows: int, act_bytes: int) -> int:
    """Live bytes at the peak of vLLM's dummy sampler run over `rows` requests (GPUModelRunner._dummy_sampler_run:
    top_p 0.9, top_k vocab - 1, neither all greedy nor all random, no logprobs, the PyTorch-native top-k/top-p path
    that is the default): per logit, compute_logits' output in the model dtype beside the larger of the sort's stage
    (the fp32 copy, the sorted values and indices and the sort's workspace) and the masking stage after it. Every
    tensor-parallel rank gathers the whole vocabulary, so tp does not divide it. Fewer than 128 rows take PyTorch's
    other sort paths, whose workspace differs (taken as the same here)."""
    return rows * arch.vocab * (act_bytes + SAMPLER_BYTES_PER_LOGIT)


AWQ_GEMM_TILE_ROWS = 16
"""Rows of the batch llm-awq's GEMM kernel takes per block (gemm_forward_4bit_cuda_m16nXk32: M tiles of 16); each
tile unpacks the weights again (csrc/quantization/awq/gemm_kernels.cu, blockIdx_y over (M + 15) / 16 tiles)."""


@engine("vllm")
class VLLM(ExecutionModel):
    FORMATS = ("bf16", "fp8", "awq-int4")
    NATIVE_FP8_ONLY = True
    OPTIONS = frozenset({"backend"})
    ENGINE_OPTIONS = {"num-scheduler-steps": "num_scheduler_steps", "max-model-len": "max_model_len",
                      "v1": "v1_engine", "max-num-seqs": "max_num_seqs",
                      "max-num-batched-tokens": "max_num_batched_tokens",
                      "gpu-memory-utilization": "gpu_memory_utilization", "enforce-eager": "enforce_eager",
                      "block-size": "kv_block_tokens", "enable-prefix-caching": "prefix_caching",
                      "no-enable-prefix-caching": "prefix_caching_off", "offline": "offline_frontend"}
    SWITCHES = frozenset({"v1", "enforce-eager", "enable-prefix-caching", "no-enable-prefix-caching", "offline"})
    BATCH_CAP_OPTION = "max-num-seqs"

    @classmethod
    def build(cls, device, version=None, *, backend=None, build_date=None, settings=None) -> ExecutionModel:
        """`backend` may only name the platform vLLM runs `device` on (PLATFORMS): vLLM has one build per
        platform, chosen by the device."""
        if device.kind in ("gpu", "soc") and (device.vendor not in PLATFORMS
                                              or device.architecture in PRE_VOLTA):
            raise ConfigError(f"--engine vllm on {device.id}: vLLM runs NVIDIA GPUs of compute capability 7.0 and up "
                              "(CUDA), AMD GPUs (ROCm), Intel GPUs (XPU) and CPUs; this is a "
                              f"{device.vendor} {device.kind} of architecture {device.architecture} (expected one of "
                              "those: try --engine llama.cpp" + (" or mlx)" if device.vendor == "apple" else ")"))
        if backend is not None:
            native = "cpu" if device.kind == "cpu" else PLATFORMS.get(device.vendor, ("",))[0]
            if backend != native:
                from sizeup.engines.base import option_owners

                others = " or ".join(o for o in option_owners("backend") if o != cls.NAME)
                raise ConfigError(f"--backend {backend}: vLLM runs {device.id} ({device.vendor} {device.kind}) on "
                                  f"its {native or 'no'} platform only (--backend {native or 'none'} or none); another "
                                  f"backend is a {others} build option: use it with --engine {others}")
        return super().build(device, version, settings=settings)

    @property
    def graphs(self) -> bool:
        """Whether decode replays a captured graph: the platform's default (PLATFORMS), off under enforce-eager and
        in the releases before CUDA graphs (`cuda_graphs` 0: before 0.2.6)."""
        if self.profile.value("enforce_eager", 0) or self.device.kind == "cpu":
            return False
        if not self.profile.value("cuda_graphs", 1):
            return False
        return PLATFORMS.get(self.device.vendor, ("", False))[1]

    @property
    def platform(self) -> str:
        """The platform vLLM runs this device on (PLATFORMS): cuda, hip, sycl, or cpu."""
        return "cpu" if self.device.kind == "cpu" else PLATFORMS.get(self.device.vendor, ("",))[0]

    def per_op_overhead(self, decode: bool, tokens: int | None = None) -> Range | None:
        """Graph replay at decode (`decode_overhead_s`, a HIP graph's node on ROCm: `decode_overhead_s.hip`); a release
        before CUDA graphs states its eager launch cost in `decode_overhead_s`; otherwise without a graph
        (enforce-eager, Intel XPU) the device kind's eager launch time."""
        if not self.graphs:
            return None if self.profile.value("cuda_graphs", 1) else super().per_op_overhead(decode, tokens)
        hip = self.profile.range("decode_overhead_s.hip") if decode and self.platform == "hip" else None
        return hip or super().per_op_overhead(decode, tokens)

    def decode_attention_memory(self) -> Range | None:
        """The paged decode attention kernel's share of the HBM bandwidth on CUDA (`decode_attention_memory`:
        FlashAttention's paged decode); None on other platforms (ROCm's custom paged attention, Intel XPU: no
        bandwidth figure of theirs read)."""
        return self.profile.range("decode_attention_memory") if self.platform == "cuda" else None

    def matrix_kernel(self, weights: str, decode: bool, tokens: int):
        """On ROCm: fp8 weights' GEMMs at `rocm_matmul@fp8` of the dense fp8 peak (hipBLASLt through
        torch._scaled_mm, or AMD's tuned kernels), and at decode the GEMMs' share of the HBM bandwidth
        (`rocm_decode_memory`: hipBLASLt's skinny-M GEMMs before vLLM had its own skinny kernels, wvSplitK after);
        16-bit and fp8 weights only (the formats these GEMMs run). On CUDA: a release's own decode kernel for a
        packed format where its data counts one (`_counted_kernel`: AWQ before 0.5.3). Elsewhere, or where the data
        states neither, the device defaults."""
        if self.platform == "cuda":
            return self._counted_kernel(weights, decode, tokens)
        if self.platform != "hip" or weights.lower() not in ("bf16", "fp16", "fp8"):
            return None  # other formats (AWQ) run their own kernels: the device defaults
        memory = self.profile.range("rocm_decode_memory") if decode else None
        fraction = self.profile.range("rocm_matmul@fp8") if weights.lower() == "fp8" else None
        if memory is None and fraction is None:
            return None
        keys = [k for k, v in (("rocm_matmul@fp8", fraction), ("rocm_decode_memory", memory)) if v is not None]
        source = "; ".join(s for s in self.profile.sources if s.split(": ", 1)[0] in keys)
        phase = "decode" if decode else "prefill"
        return Kernel(self.NAME, f"ROCm {phase} GEMM", f"vLLM's {phase} GEMMs on ROCm",
                      "fp8" if fraction is not None else "device-default", fraction, ", ".join(keys), source, memory,
                      table="data/engines/vllm.yaml")

    def _counted_kernel(self, weights: str, decode: bool, tokens: int):
        """`decode_alu_ops_per_weight@<format>` (> 0) of this release: the instructions its decode kernel issues per
        weight, priced at the SMs' instruction rate beside the device's default bandwidth (vLLM before 0.5.3 ran AWQ
        through llm-awq's GEMM kernel, which dequantizes every weight into shared memory on each call); None: none.
        The kernel unpacks a weight once per 16-row tile of the batch (M padded to 16), so a step of `tokens`
        sequences issues ops x ceil(tokens / 16) per weight: per multiply-add, ops x ceil(tokens / 16) / tokens."""
        key = f"decode_alu_ops_per_weight@{weights.lower()}"
        ops = self.profile.range(key) if decode else None
        if ops is None or ops.low <= 0:
            return None
        rows = max(int(tokens), 1)
        per_token = rows / -(-rows // AWQ_GEMM_TILE_ROWS)  # multiply-adds per unpacked weight
        source = next((s for s in self.profile.sources if s.startswith(f"{key}: ")), f"{key}: data/engines/vllm.yaml")
        return Kernel(self.NAME, f"{weights.lower()} decode", f"vLLM {self.version} {weights.lower()} GEMM at batch "
                      f"{rows}", "alu", Range(2 / ops.high, 2 / ops.typical, 2 / ops.low).scale(per_token), key,
                      source, None, table="data/engines/vllm.yaml")

    def missing_kernel_note(self, weights: str, decode: bool) -> str | None:
        """Off CUDA (ROCm, Intel XPU) vLLM's kernels have no fraction of their own in sizeup's data: say so."""
        platform = self.platform
        if platform == "cuda":
            return None
        kernels = {"sycl": "IPEX / oneDNN kernels on XPU", "hip": "ROCm kernels"}.get(platform, "kernels")
        return (f"{'decode' if decode else 'prefill'}: vLLM on {self.device.id} ({kernels}): no kernel fraction read "
                f"or fitted for them: priced at the {self.device.kind} default efficiency, with the {self.device.architecture} "
                f"class's library GEMM fractions where data/efficiency/{self.device.kind}.yaml lists them (derived)")

    def step_overhead(self, arch: ModelArch, decode: bool) -> Range | None:
        """The scheduler's host time per step; V0's multi-step scheduling (--num-scheduler-steps N) schedules once
        for N decode steps, so a decode step pays 1/N of it."""
        base = self.profile.range("step_overhead_s")
        steps = max(int(self.profile.value("num_scheduler_steps", 1)), 1)
        return base.scale(1 / steps) if base is not None and decode and steps > 1 else base

    def tensor_parallel(self, link_kind: str, gpus: int) -> TensorParallel | None:
        """vLLM's tensor parallelism: from the release that turned it on, its custom all-reduce (one pass over
        peer memory registered by CUDA IPC) where vLLM takes it: NVIDIA GPUs, 2, 4, 6 or 8 of them, all joined by
        NVLink, or two peer-capable GPUs on PCIe (vllm/distributed/device_communicators/custom_all_reduce.py: "not
        supported on more than two PCIe-only GPUs"); on ROCm, MI300-class GPUs joined by xGMI from the release that
        brought it upstream; NCCL's (RCCL's) ring otherwise (engines/peer_all_reduce.py). Releases before its NCCL
        control plane ran every GPU's worker as a Ray actor called once per step (`ray_worker_call_s` per GPU)."""
        rpc = self.profile.range("ray_worker_call_s")
        host = rpc.scale(gpus) if rpc is not None and rpc.high > 0 else None
        notes = () if host is None else (
            f"vLLM {self.version}: every GPU's worker is a Ray actor called once per step, {rpc.typical * 1e6:,.0f} µs "
            f"each: {host.typical * 1e3:,.2f} ms per step over {gpus} GPUs",)
        tp = peer_all_reduce(self, link_kind, gpus, VLLM_ALL_REDUCE, host_s=host, notes=notes)
        if self.graphs or gpus < 2:
            return tp
        return replace(tp, eager_launches=True) if tp is not None else TensorParallel(eager_launches=True)

    def option_notes(self) -> tuple[str, ...]:
        notes = []
        if not self.graphs and self.device.kind != "cpu":
            why = ("--enforce-eager" if self.profile.value("enforce_eager", 0) else
                   f"vLLM {self.version} captures no graph (CUDA graphs came with 0.2.6)"
                   if not self.profile.value("cuda_graphs", 1) else
                   f"vLLM captures no graph on {self.device.vendor} GPUs by default (engines/vllm.py PLATFORMS)")
            cost = ("its release's eager per-kernel host time, data/engines/vllm.yaml decode_overhead_s"
                    if not self.profile.value("cuda_graphs", 1) else
                    "the device kind's per-kernel host time, data/efficiency/gpu.yaml overhead_s")
            notes.append(f"{why}: every kernel is launched eagerly ({cost}), no graph memory held")
        if "prefix_caching" in self.profile.values or "prefix_caching_off" in self.profile.values:
            notes.append("--enable-prefix-caching / --no-enable-prefix-caching: accepted; sizeup prices every prompt "
                         "computed in full (no prefix shared between requests), as a benchmark of distinct prompts runs")
        if self.offline:
            notes.append(f"--engine-opt offline: the offline LLM class (LLM.generate, `vllm bench throughput`): every "
                         f"prompt added in one call, no API server (no HTTP, no per-token streaming, no intake queue)"
                         + (", its own per-request host time (data/engines/vllm.yaml host_per_request_s.offline)"
                            if self.v1 else "") + f"; {self.load_rule()}")
        steps = int(self.profile.value("num_scheduler_steps", 1))
        if steps > 1:
            notes.append(f"--num-scheduler-steps {steps}: V0 multi-step scheduling, the scheduler's host time paid "
                         f"once per {steps} decode steps")
        if self.profile.values.get("max_model_len"):
            notes.append(f"--max-model-len {int(self.profile.values['max_model_len']):,}: bounds a request's context; "
                         f"the KV pool and its profiling run are priced as without it")
        return tuple(notes)

    @property
    def v1(self) -> bool:
        """Whether this release runs the V1 engine (the default from 0.8): chunked prefill always on, and the dummy
        sampler part of its profiling run."""
        return bool(self.profile.value("v1_engine", 1))

    @property
    def mla_cache_key(self) -> str:
        """MLA's latent cache came to V0 in 0.7.1 and to V1 in 0.8 (`mla_latent_cache`, `mla_latent_cache.v1`)."""
        return "mla_latent_cache.v1" if self.v1 else "mla_latent_cache"

    def host_floor(self, requests: float, gpus: int = 1):
        """Host time per running request and step (workload/host_floor.py): V1 overlaps it with the GPU step (a floor
        under it), `host_per_request_s` for `vllm serve` (its API server streams every token), `host_per_request_s
        .offline` for the LLM class; V0 before 0.6 ran it between steps (`host_overlap` 0: added to each step)."""
        per = self.profile.range("host_per_request_s.offline") if self.offline and self.v1 else None
        return per.scale(max(requests, 0.0)) if per is not None else super().host_floor(requests, gpus)

    def front_floor(self, requests: float):
        """`vllm serve`'s API-server process (V1: the AsyncLLM output handler detokenizes every running request's
        token of the iteration and the OpenAI server streams a chunk for it, in the process that also takes requests
        in), pipelined with the engine core's step: `frontend_per_token_s` x the running requests (workload/
        front_process.py queues it with the intake); the offline LLM class streams nothing: None."""
        front = None if self.offline else self.profile.range("frontend_per_token_s")
        return None if front is None or front.high <= 0 else front.scale(max(requests, 0.0))

    def request_overhead(self):
        """`vllm serve`'s API server per request (base.py); the offline LLM class has no server: None."""
        if self.offline:
            return None
        served = super().request_overhead()
        if served is None:
            return None
        return served[0], (served[1] + f"; {self.label} priced as `vllm serve` driven over HTTP (`vllm bench serve`, "
                           "benchmark_serving.py): an offline run (LLM.generate, `vllm bench throughput`, "
                           "benchmark_throughput.py) is --engine-opt offline")

    def request_intake(self):
        """The API server's busy time per request it takes in; the offline LLM class adds its prompts in one call
        before it steps the engine: None."""
        return None if self.offline else super().request_intake()

    @property
    def batching(self) -> Batching:
        step, seqs, why = vllm_batch_defaults(self.profile, self.device)
        if not self.v1 and self.profile.values.get("max_num_batched_tokens") is None:
            step, why = self._v0_step_tokens(seqs)
        return Batching(scheduling="continuous", chunked_prefill=self.v1, max_batched_tokens=step, max_sequences=seqs,
                        mixed_steps=self.v1, steps_per_schedule=max(int(self.profile.value("num_scheduler_steps", 1)), 1),
                        basis=why + ("" if self.v1 else "; V0 engine: chunked prefill off by default, prompts run "
                                                        "in prefill steps of their own"))

    def _v0_step_tokens(self, seqs: int) -> tuple[int | None, str]:
        """The V0 engine's prompt tokens a step (chunked prefill off): vllm/config.py SchedulerConfig sets
        max_num_batched_tokens = max(max_model_len, 2048), so a prefill step takes whole prompts up to the context
        the server was started with (`--max-model-len`; without it the model's own context, which any prompt
        fits: None, whole prompts)."""
        length = self.profile.values.get("max_model_len")
        if not length:
            return None, (f"vLLM V0 defaults: max_num_seqs {seqs:,}, max_num_batched_tokens max(max_model_len, 2048) "
                          f"(the model's context: whole prompts a step)")
        step = max(int(length), 2048)
        return step, (f"vLLM V0 defaults: max_num_seqs {seqs:,}, max_num_batched_tokens max(max_model_len "
                      f"{int(length):,}, 2048) = {step:,}")

    def memory(self, req: MemoryRequest) -> InferenceMemory:
        """vLLM's KV pool: `gpu_memory_utilization` of the CUDA total less the weights, the profiling run's torch
        peak, non-torch and CUDA-graph memory. profile_run (vllm/v1/worker/gpu_model_runner.py) runs the forward of
        one max_num_batched_tokens step (after the multimodal profile for a VLM), keeps its hidden states, then the
        sampler on min(max_num_seqs, step) rows with the encoder cache still held: the peak is the larger of the two
        phases."""
        arch, notes = req.arch, []
        step_tokens, max_seqs, why = vllm_batch_defaults(self.profile, self.device)
        notes.append(why)
        block = int(self.profile.value("kv_block_tokens", 16))
        kv_seq = req.kv_per_sequence(block)
        rows = min(max_seqs, step_tokens)
        forward = req.activation_peak(step_tokens, 0)  # the forward computes no logits
        # the sampler phase: its peak beside the step's hidden states and the sampled rows (and their random copy);
        # V0's profile_run sampled too (vllm/worker/model_runner.py: max_num_seqs dummy sequences with top_p 0.99 and
        # top_k vocab - 1 "to reflect the accurate memory usage", the same sort-based top-k/top-p); V1 made it a
        # separate _dummy_sampler_run. V0's sampler also kept full probs and logprobs: a lower bound there
        kept = (step_tokens + 2 * rows) * arch.hidden * req.act_bytes
        sampler = vllm_sampler_peak(arch, rows, req.act_bytes) + kept
        profile = self._multimodal(req, forward, step_tokens, max_seqs)
        if profile is None:
            forward = req.with_tower(forward, True, 0, f"{self.NAME}'s fused attention backend; at this request's "
                                                       f"inputs", notes)
            activations, mm_bytes = max(forward, sampler), 0
        else:
            notes.extend(profile.notes)
            activations = max(forward, sampler)
            mm_bytes = max(profile.peak_bytes, sampler + profile.encoder_cache_bytes) - activations
        phase = "the sampler's" if sampler > forward else "the forward's"
        notes.append(f"vLLM{'' if self.v1 else ' V0'} profiling run: the {step_tokens:,}-token forward peaks at "
                     f"{forward / GIB:,.2f} GiB, the dummy sampler over {rows:,} rows × {arch.vocab:,} logits at "
                     f"{sampler / GIB:,.2f} GiB (model-dtype and fp32 logits, the top-k/top-p sort and its workspace"
                     + ("" if self.v1 else "; V0 also kept probs and logprobs, not counted") + f"): {phase} is the peak")
        non_torch = self.profile.range("non_torch_bytes") or Range(0.5 * GIB, 0.5 * GIB, 0.5 * GIB)
        graphs = self.profile.range("cuda_graph_bytes") or Range(0.5 * GIB, 0.5 * GIB, 0.5 * GIB)
        graphs = graphs if self.graphs else Range(0.0, 0.0, 0.0)
        utilization = self.profile.value("gpu_memory_utilization", 0.92)
        # vLLM takes `utilization` of the total CUDA reports; the CUDA context stays outside that budget,
        # and since v0.21 the CUDA-graph memory is estimated inside it (data/engines/vllm.yaml sources)
        budget = device_total_bytes(req.device) * utilization
        overhead = int(non_torch.typical + graphs.typical)
        inside = bool(self.profile.value("cuda_graph_memory_in_budget", 1))
        pool = int(budget - req.weights_bytes - activations - mm_bytes - (overhead if inside else non_torch.typical))
        needed = kv_seq * req.batch
        concurrency = min(max(pool, 0) // kv_seq, max_seqs) if kv_seq else None
        fits = pool >= needed and pool > 0 and budget + (0 if inside else graphs.typical) <= req.usable.typical
        refused = self._refuses_to_start(req, pool, block)
        if refused and self.profile.values.get("max_model_len"):  # what vLLM would be started with: it does not start
            raise ConfigError(f"--engine-opt max-model-len={int(self.profile.values['max_model_len'])}: {refused}")
        if refused:  # at the model's own context the deploy is taken to pass a --max-model-len the pool holds
            notes.append(refused)
        notes.append(f"vLLM takes {utilization:.0%} of the GPU up front; the KV pool is what remains after weights, "
                     f"the profiling run's peak" + (" (with the multimodal profile)" if profile else "")
                     + (", non-torch and CUDA-graph memory" if inside else
                        " and non-torch memory; CUDA graphs are captured after it, outside that budget (before 0.21)")
                     + f"; at most max_num_seqs {max_seqs:,} sequences run at once")
        return InferenceMemory(weights_bytes=req.weights_bytes, kv_cache_bytes=max(pool, 0),
                               kv_cache_needed_bytes=needed, activations_bytes=activations, overhead_bytes=overhead,
                               usable_bytes=req.usable, fits=fits, cpu_bytes=req.cpu_weights_bytes,
                               max_concurrent_sequences=concurrency, notes=tuple(notes),
                               multimodal_profile_bytes=mm_bytes, multimodal_profile=profile)

    def _refuses_to_start(self, req: MemoryRequest, pool: int, block: int) -> str | None:
        """Why vLLM would not start: its KV pool cannot hold one request of max_model_len tokens (`--max-model-len`,
        else the model's own context). V1 (vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory: "To serve at
        least one request with the models's max seq len (N), (X GiB KV cache is needed, which is larger than the
        available KV cache memory (Y GiB)") and V0 (vllm/worker/worker.py raise_if_cache_size_invalid: "The model's
        max seq len (N) is larger than the maximum number of tokens that can be stored in KV cache (M)") both raise
        at start-up (seen: github.com/QwenLM/Qwen3/issues/295, V0, 2024-04; github.com/vllm-project/recipes/pull/12,
        V1 0.10.1, 2025-08; read 2026-12-05). Checked where a sequence's cache grows linearly with its tokens (no sliding-window, state-space
        or encoder layer, whose bytes at N tokens the per-token figure would overstate); None where it starts. The
        caller refuses a --max-model-len given in one line (the server would not start: nothing to estimate); at the
        model's own context it is a note."""
        arch = req.arch
        length = int(self.profile.values.get("max_model_len") or arch.max_context or 0)
        if length <= 0 or req.context <= 0 or pool <= 0 or arch.encoder:
            return None
        if any(layer.ssm is not None or layer.attention.window for layer in arch.layers):
            return None
        per_token = req.kv_per_sequence(1) / req.context
        if per_token <= 0:
            return None
        needed = per_token * -(-length // block) * block
        if needed <= pool:
            return None
        most = int(pool // (per_token * block)) * block
        if self.profile.values.get("max_model_len"):
            return (f"vLLM refuses to start: one request of --max-model-len {length:,} tokens needs {needed / GIB:,.2f} "
                    f"GiB of KV cache, more than the {pool / GIB:,.2f} GiB pool (a ValueError at start-up in V0 and "
                    f"V1): give --engine-opt max-model-len={most:,} or less, or more memory")
        return (f"vLLM started without --max-model-len takes the model's context, {length:,} tokens, whose one "
                f"request needs {needed / GIB:,.2f} GiB of KV cache, more than the {pool / GIB:,.2f} GiB pool: it "
                f"refuses to start (a ValueError in V0 and V1) unless given --max-model-len {most:,} or less, which "
                f"this estimate assumes (a benchmark run on these defaults cannot have been served this way)")

    def _multimodal(self, req: MemoryRequest, decoder: int, step_tokens: int, max_seqs: int):
        """vLLM's multimodal profile for a vision tower: the scenario's images per prompt and image size as the
        deploy's limit_mm_per_prompt, max_model_len the model's own context (the cache's where the config names
        none)."""
        arch = req.arch
        if arch.tower is None or arch.tower.kind != "vision":
            return None
        feed = req.tower
        return vllm_multimodal_profile(arch, decoder_bytes=decoder, images=feed.images if feed else 0,
                                       image_hw=feed.image_hw if feed else None,
                                       max_model_len=arch.max_context or req.context, act_bytes=req.act_bytes,
                                       tp=req.tp, step_tokens=step_tokens, max_seqs=max_seqs,
                                       default_limit=int(self.profile.value("limit_mm_per_prompt", 999)),
                                       tower_pass=req.tower_pass)

    def launch(self, request: LaunchRequest) -> Launch:
        """`vllm serve` with the plan's tensor-parallel size, longest request, memory share (the profile's
        gpu_memory_utilization the plan priced), batch cap and weight format; the images per prompt the plan sized
        (engines/vllm_multimodal.py), so the server profiles, and keeps back, what the plan did (without them vLLM
        profiles its default limit of images at the processor's largest size)."""
        util = self.profile.value("gpu_memory_utilization", 0.92)
        args = [request.checkpoint, "--host", "0.0.0.0", "--port", "8000", "--tensor-parallel-size",
                str(request.gpus), "--max-model-len", str(request.max_len), "--gpu-memory-utilization", f"{util:g}",
                "--max-num-seqs", str(max(1, request.max_batch))]
        if request.quant in VLLM_QUANTIZATION:
            args += ["--quantization", VLLM_QUANTIZATION[request.quant]]
        args += dtype_flag(request.quant) + images_flag(request, "--limit-mm-per-prompt")
        return Launch(command=("vllm", "serve"), args=tuple(args), port=8000, release=self.version)
