"""TensorRT-LLM (data/engines/tensorrt-llm.yaml), its PyTorch backend: decode-only batches replayed from CUDA graphs
(`decode_overhead_s` per kernel) and the executor's host time per iteration (`step_overhead_s`); memory allocated
as the request needs it for one request's run, the KV cache pre-allocated (`free_gpu_memory_fraction` of the
memory free after the weights and a max_num_tokens step's activations) for how many run at once; attention through
its fused kernels. In-flight batching schedules context (prompt) and
generation requests in the same iteration, up to max_num_tokens tokens and max_batch_size requests; an FP8
checkpoint (ModelOpt) carries an FP8 KV cache, which the engine follows by default.

NVFP4 (`TensorRTLLM.matrix_kernel`): ModelOpt NVFP4 checkpoints run FP4 x FP4 GEMMs on Blackwell's FP4 tensor cores, the
activations quantized to NVFP4 inside the kernel before each GEMM (fused into the RMSNorm / SwiGLU), at the fraction
of the FP4 peak its data file states per architecture (`fp4_gemm@ARCH`) for steps of at least `fp4_gemm_min_tokens`
tokens; smaller steps, and architectures the file states none for, keep the device default. A device without FP4
tensor cores cannot run an NVFP4 checkpoint under TensorRT-LLM (`NATIVE_ONLY`: refused, and left out of its ladder).

Tensor parallelism (`TensorRTLLM.tensor_parallel`): AllReduceStrategy AUTO runs its own one-shot / two-shot kernels
over peer memory where every GPU of the group is joined by NVLink and the message fits its workspace (16 MB at
TP 2, 8 MB above), NCCL otherwise (a PCIe-only group: NCCL always).

Entry point (`TensorRTLLM.unserved`): a run under load is priced as `trtllm-serve` on its defaults (the OpenAI server
a user deploys): the LLM API's decode graphs (sizes 1-32, 64, 128, no padding: a generation-only batch of another size
runs eagerly, `cuda_graph_max_bs.serve`), and from 1.0 the server's main Python process, which takes each request in
(HTTP, chat template, tokenization) and detokenizes and streams every token of every request while the executor runs in
its own process (`request_overhead_s`, `frontend_per_token_s`; `--engine-opt num-postprocess-workers=N` moves the
detokenizing and chunk building to N worker processes). `--engine-opt offline` prices the in-process entry
points instead (`trtllm-bench`, the LLM API's generate, an MLPerf harness): no HTTP front end, graphs as trtllm-bench
captures them (padded up to its batch; an LLM API run on its defaults states `--engine-opt cuda-graph-max-batch-size`).
Unlike vLLM's LLM class, the LLM API takes requests as they come (generate_async), so an in-process run may still be
loaded with `--rps` (MLPerf Server). A static batch (an estimate with no load, a batch job: `ExecutionModel.static`)
is priced in-process too: nothing serves it. Before 1.0 neither the server nor the in-process graphs were read, so
`offline` changes nothing there and the note says so.

Executor loop (data `schedule_ahead_steps`, Batching.schedule_ahead_steps): from 1.0 the PyTorch executor's overlap
scheduler forms and launches step n+1 before it waits for step n, so under load a request that arrives mid-step joins
the step after the one already formed (one step more TTFT than the C++ executor of 0.x, which fetches new requests
between steps); an idle engine schedules a lone request at once. The first token leaves as its step ends (no
first_token_lag_steps): its response is handled right after the next step is launched.
"""

from __future__ import annotations

from sizeup.engines.attention_dp import pool_sequences
from sizeup.engines.base import Batching, ExecutionModel, TensorParallel, engine
from sizeup.engines.kernels import Kernel
from sizeup.engines.launch import Launch, LaunchRequest
from sizeup.engines.peer_all_reduce import PeerAllReduce, peer_all_reduce
from sizeup.engines.reserve import InferenceMemory, MemoryRequest, allocate_on_demand
from sizeup.units import GIB

TRTLLM_ALL_REDUCE = PeerAllReduce(name="TensorRT-LLM one-shot / two-shot all-reduce", world_sizes=(2, 4, 8),
                                  pcie_pairs=False, max_bytes_two_gpus=16_000_000)
"""AllReduceStrategy AUTO (cpp/tensorrt_llm/thop/allreduceOp.cpp selectImplementation: NCCL without P2P, and under
AUTO without NVLink; else the custom kernels up to getMaxRequiredWorkspaceSize: 16,000,000 B at world size <= 2,
8,000,000 B above; cpp/tensorrt_llm/common/customAllReduceUtils.h: its strategy tables cover TP 2, 4 and 8, NCCL
elsewhere; github.com/NVIDIA/TensorRT-LLM at 005b299bd30992a58607c7628bb2009264970f37, read 2026-12-05)."""


@engine("tensorrt-llm", "trtllm", "trt-llm")
class TensorRTLLM(ExecutionModel):
    FORMATS = ("bf16", "fp8", "nvfp4", "awq-int4")
    NATIVE_FP8_ONLY = True
    NATIVE_ONLY = ("nvfp4",)
    """"Note that NVFP4 is only supported on NVIDIA Blackwell" (docs/source/deployment-guide/quick-start-recipe-for-
    llama3.3-70b-on-trtllm.md); ModelOpt's support matrix: FP4 "GPUs: Blackwell and Later"."""
    NATIVE_ONLY_HINT = "FP4 tensor cores are Blackwell's; vllm runs NVFP4 weight-only there: --engine vllm"
    ENGINE_OPTIONS = {"max-batch-size": "max_batch_size", "max-num-tokens": "max_num_tokens",
                      "enable-attention-dp": "enable_attention_dp", "cuda-graph-max-batch-size": "cuda_graph_max_bs",
                      "offline": "offline_frontend", "num-postprocess-workers": "num_postprocess_workers",
                      "batch-scheduler-policy": "kv_reserve_to_completion",
                      "kv-cache-free-gpu-memory-fraction": "kv_free_gpu_memory_fraction"}
    SWITCHES = frozenset({"enable-attention-dp", "offline"})
    OPTION_WORDS = {"batch-scheduler-policy": {"guaranteed_no_evict": 1.0, "no_evict": 1.0, "max_utilization": 0.0,
                                               "max_util": 0.0}}
    """CapacitySchedulerPolicy (the Triton backend's batch_scheduler_policy, an MLPerf harness's 'max_util' /
    'no_evict'): GUARANTEED_NO_EVICT (the default) keeps each started request's blocks to completion; MAX_UTILIZATION
    admits a request on its next step's blocks and pauses the latest started when the pool runs out, its generated
    tokens moved into its prompt and recomputed (data `kv_preempt_recompute`, Batching.preempts)."""
    BATCH_CAP_OPTION = "max-batch-size"
    IN_PROCESS_ARRIVALS = True
    """The LLM API takes requests as they come (LLM.generate_async; the MLPerf harness's Server scenario feeds the
    executor as LoadGen issues): in-process (`in_process`, base.py) is not offline, --rps and --concurrency N stay."""

    @property
    def unserved(self) -> bool:
        """Whether the run is priced without trtllm-serve: in-process (`--engine-opt offline`: trtllm-bench, the LLM
        API's generate, an MLPerf harness) or a static batch (no load: every request handed over at once)."""
        return self.in_process or self.static

    @property
    def served_priced(self) -> bool:
        """Whether this release prices trtllm-serve apart from an in-process run: its front end's per-token or
        per-request time, or the LLM API's unpadded decode graphs (from 1.0; before it none was read)."""
        front, request = self.profile.range("frontend_per_token_s"), self.profile.range("request_overhead_s")
        graphs = (self.profile.value("cuda_graph_max_bs.serve", 0)
                  and not self.profile.value("cuda_graph_padding.serve", 1))
        return bool(graphs) or any(r is not None and r.high > 0 for r in (front, request))

    @property
    def graph_max_batch(self) -> int | None:
        """The largest decode batch replayed from a captured graph: a run's own `--engine-opt
        cuda-graph-max-batch-size` (replayed up to it, as if padded); in-process `cuda_graph_max_bs` (0: every batch,
        trtllm-bench pads to its captured sizes); under trtllm-serve's defaults `cuda_graph_max_bs.serve`."""
        own = int(self.profile.value("cuda_graph_max_bs", 0))
        if own or self.unserved:
            return own or None
        return int(self.profile.value("cuda_graph_max_bs.serve", 0)) or None

    def per_op_overhead(self, decode: bool, tokens: int | None = None):
        """As base.py, and under trtllm-serve's defaults (no `--engine-opt cuda-graph-max-batch-size`, not in-process)
        the LLM API's capture without padding (`cuda_graph_padding.serve` 0): a generation-only batch replays a graph
        only at a captured size, 1-31 and the powers of two from 32 up to `cuda_graph_max_bs.serve`; any other size
        is launched eagerly (the device kind's launch time)."""
        if decode and tokens and not self._replays(round(tokens)):
            return None
        return super().per_op_overhead(decode, tokens)

    def _replays(self, batch: int) -> bool:
        padded = (self.unserved or self.profile.value("cuda_graph_max_bs", 0)
                  or self.profile.value("cuda_graph_padding.serve", 1))
        return bool(padded) or batch < 32 or (batch & (batch - 1)) == 0

    def host_floor(self, requests: float, gpus: int = 1):
        """The executor's host time per iteration: with attention data parallelism (`enable_attention_dp`) every GPU's
        executor schedules, samples and returns its own share of the requests, otherwise every rank's loop walks the
        whole batch. The server's main process is `front_floor`."""
        ranks = gpus if self.profile.value("enable_attention_dp", 0) else 1
        return super().host_floor(requests / max(ranks, 1), gpus)

    def front_floor(self, requests: float):
        """Under trtllm-serve the main process, pipelined with the executor's: it detokenizes and streams each
        request's token of the iteration (`frontend_per_token_s`), one process whatever the ranks, or spread over
        `num_postprocess_workers` processes (`postprocess_workers`); in-process runs and static batches: None."""
        front = None if self.unserved else self.profile.range("frontend_per_token_s")
        if front is None or front.high <= 0:
            return None
        return front.scale(max(requests, 0.0) / self.postprocess_workers)

    front_streams = property(lambda self: self.postprocess_workers <= 1)
    """With post-processing workers the main process only takes requests in (and relays chunks, not priced)."""

    @property
    def postprocess_workers(self) -> int:
        """The processes that detokenize and build the streamed chunks under trtllm-serve: its main process (0, the
        default), or `--engine-opt num-postprocess-workers=N` worker processes, each taking its share of the
        requests (openai_server.py: with postproc_worker_enabled the main process yields the workers' finished
        `_postprocess_result` and calls no post_processor). The main process's relay of those chunks is not priced
        (no figure read)."""
        return max(int(self.profile.value("num_postprocess_workers", 0)), 1)

    def request_overhead(self):
        """trtllm-serve's host time per request outside the steps (entry_point.py, `request_overhead_s` by release; 0 for
        releases none was read for); an in-process run has no server: None."""
        if self.unserved:
            return None
        served = super().request_overhead()
        if served is None or served[0].high <= 0:
            return None
        return served[0], (served[1] + f"; {self.label} priced as trtllm-serve driven over HTTP: an in-process run "
                           "(trtllm-bench, the LLM API, an MLPerf harness) is --engine-opt offline")

    def request_intake(self):
        """The server process's busy time per request it takes in; in-process runs hand requests to the executor
        directly: None."""
        return None if self.unserved else super().request_intake()

    def option_notes(self) -> tuple[str, ...]:
        """What the entry point changes, said only where it was priced: the in-process run, a static batch priced as
        one, or the server's front end and decode graphs; before 1.0 that neither is priced apart."""
        if not self.served_priced:
            return ((f"--engine-opt offline changes nothing for {self.label}: no figure was read for a served front "
                     "end before 1.0 (trtllm-serve, Triton's tensorrtllm_backend), so served and in-process runs are "
                     "priced alike",) if self.in_process
                    else () if self.static else
                    (f"{self.label} served: its front end (trtllm-serve, Triton's tensorrtllm_backend) is not priced, "
                     "no per-token or per-request figure read for releases before 1.0",))
        if self.unserved:
            what = ("--engine-opt offline: the in-process entry point" if self.in_process else
                    f"{self.label}, a batch with no load (no --concurrency / --rps): priced as an in-process run")
            return (f"{what} (trtllm-bench, the LLM API, an MLPerf harness): no HTTP server, no per-token streaming; "
                    "decode graphs as trtllm-bench captures them (padded up to its batch: every decode batch replayed "
                    "unless --engine-opt cuda-graph-max-batch-size says)"
                    + (f"; unlike vLLM's and SGLang's offline the LLM API takes requests as they come (generate_async): "
                       f"{self.load_rule()}" if self.in_process
                       else "; under load (--concurrency / --rps, a sweep's columns under load) it is priced as "
                            "trtllm-serve"),)
        graphs = self.graph_max_batch
        front = self.profile.range("frontend_per_token_s")
        return (f"{self.label} priced as trtllm-serve on its defaults: "
                + (f"decode graphs replayed for batches of 1-31 and the powers of two up to {graphs:,} (the LLM "
                   "API's captured sizes, no padding: other generation-only batches launched eagerly)"
                   if graphs and not self._replays(33) else
                   f"decode graphs replayed for batches up to {graphs:,}" if graphs
                   else "every decode batch replayed from a graph")
                + ("; its main Python process detokenizes and streams every token of every request, beside the "
                   "executor's process (the front process's time below)"
                   if front is not None and front.high > 0 and self.postprocess_workers == 1 else
                   f"; {self.postprocess_workers} postprocess workers (--num_postprocess_workers) detokenize and build "
                   f"the streamed chunks ({front.typical * 1e6:,.0f} µs a token, {front.low * 1e6:,.0f}-"
                   f"{front.high * 1e6:,.0f}), each for its share of the requests, so an iteration lasts at least "
                   f"requests / {self.postprocess_workers} x that; the main process's relay of the finished chunks is "
                   "not priced (no figure read)" if front is not None and front.high > 0 else "")
                + "; --engine-opt offline prices trtllm-bench / an in-process harness",)

    def at_gpus(self, gpus: int) -> TensorRTLLM:
        """With `enable_attention_dp` a replica of `gpus` GPUs runs that many attention ranks (engines/attention_dp.py):
        its scheduler limits and KV pool are per rank."""
        ranks = max(int(gpus), 1) if self.profile.value("enable_attention_dp", 0) else 1
        if ranks == int(self.profile.value("attention_dp_ranks", 1)):
            return self
        return self._with_setting("attention_dp_ranks", ranks)

    @property
    def batching(self) -> Batching:
        ranks = int(self.profile.value("attention_dp_ranks", 1))  # attention DP: each rank's executor its own limits
        tokens = int(self.profile.value("max_num_tokens", 8192)) * ranks
        seqs = int(self.profile.value("max_batch_size", 2048)) * ranks
        return Batching(scheduling="continuous", chunked_prefill=False, mixed_steps=True, max_batched_tokens=tokens,
                        max_sequences=seqs, limits_per_micro_batch=True,
                        basis=f"in-flight batching: context and generation requests in one iteration, at most "
                              f"max_num_tokens {tokens:,} tokens and max_batch_size {seqs:,} requests; generation-only "
                              f"batches above cuda_graph_config.max_batch_size {self.graph_max_batch or 0:,} "
                              f"launched eagerly")

    def matrix_kernel(self, weights: str, decode: bool, tokens: int):
        """NVFP4 weights on FP4 tensor cores: the FP4 x FP4 GEMM at `fp4_gemm@ARCH` of the FP4 peak, for a step of at
        least `fp4_gemm_min_tokens` tokens (prompt tokens, or the running batch at decode); None otherwise (the
        device default)."""
        if weights.lower() != "nvfp4" or "fp4" not in self.device.peak_flops_per_s:
            return None
        key = f"fp4_gemm@{self.device.architecture or ''}"
        fraction = self.profile.range(key)
        if fraction is None or tokens < self.profile.value("fp4_gemm_min_tokens", 0):
            return None
        source = next((s for s in self.profile.sources if s.startswith(f"{key}: ")), key)
        return Kernel(self.NAME, "NVFP4 GEMM", "FP4 x FP4 block-scaled GEMM, activations quantized in the kernel",
                      "fp4", fraction, key, source, table=f"data/engines/{self.profile.id}.yaml")

    def tensor_parallel(self, link_kind: str, gpus: int) -> TensorParallel | None:
        """AUTO: the one-shot / two-shot kernels over NVLink (TP 2, 4, 8; messages up to the workspace), NCCL
        otherwise. The fused residual-add + RMSNorm variants save the norm kernel beside it: not priced."""
        return peer_all_reduce(self, link_kind, gpus, TRTLLM_ALL_REDUCE)

    def default_kv_dtype(self, weights: str) -> tuple[str, str] | None:
        if weights.startswith("fp8") and self.profile.value("fp8_checkpoint_kv_fp8", 1):
            return "fp8", ("TensorRT-LLM follows the checkpoint's KV format (KvCacheConfig dtype 'auto'): an FP8 "
                           "(ModelOpt) checkpoint states kv_cache_quant_algo FP8, so the KV cache is FP8")
        if weights == "nvfp4" and self.profile.value("nvfp4_checkpoint_kv_fp8", 0):
            return "fp8", ("TensorRT-LLM follows the checkpoint's KV format (KvCacheConfig dtype 'auto'): a ModelOpt "
                           "NVFP4 checkpoint is exported with an FP8 KV cache unless asked otherwise "
                           "(hf_ptq --kv_cache_qformat defaults to fp8), so the KV cache is FP8")
        return None

    def memory(self, req: MemoryRequest) -> InferenceMemory:
        """The request's own run allocated on demand, and the KV pool the executor pre-allocates: the sequences it
        holds at once (`max_concurrent_sequences`, capped at max_batch_size)."""
        own = allocate_on_demand(req, allocator=None, tower=(True, "TensorRT-LLM's fused attention", 0))
        kv_seq = req.kv_per_sequence(1)
        step = req.activation_peak(min(int(self.profile.value("max_num_tokens", 8192)), req.batch * req.prompt),
                                   req.batch)
        free = req.usable.typical - req.weights_bytes - step
        pool = int(max(free, 0) * self.profile.value("kv_free_gpu_memory_fraction", 0.9))
        ranks = int(self.profile.value("attention_dp_ranks", 1))  # attention DP: each rank's pool its own requests
        seqs = min(pool_sequences(pool // kv_seq, req.arch, req.tp, ranks),  # max_batch_size per micro-batch
                   int(self.profile.value("max_batch_size", 2048)) * ranks * max(req.pp, 1)) if kv_seq else None
        note = (f"TensorRT-LLM pre-allocates {self.profile.value('kv_free_gpu_memory_fraction', 0.9):.0%} of the "
                f"memory free after weights and a max_num_tokens step ({pool / GIB:,.1f} GiB) as the KV cache: "
                f"{seqs:,} sequences of {req.context:,} tokens at once"
                + (f" over its {ranks} attention data-parallel ranks (each holds whole caches of its own requests)"
                   if ranks > 1 else "") if seqs is not None else "")
        return InferenceMemory(weights_bytes=own.weights_bytes, kv_cache_bytes=own.kv_cache_bytes,
                               kv_cache_needed_bytes=own.kv_cache_needed_bytes, activations_bytes=own.activations_bytes,
                               overhead_bytes=own.overhead_bytes, usable_bytes=own.usable_bytes, fits=own.fits,
                               cpu_bytes=own.cpu_bytes, max_concurrent_sequences=seqs,
                               notes=own.notes + ((note,) if note else ()))

    def launch(self, request: LaunchRequest) -> Launch:
        """`trtllm-serve` with the plan's tensor-parallel size, longest request, batch cap and the KV cache share of
        free memory the plan priced (`kv_free_gpu_memory_fraction`)."""
        share = self.profile.value("kv_free_gpu_memory_fraction", 0.9)
        return Launch(command=("trtllm-serve",), args=(
            request.checkpoint, "--host", "0.0.0.0", "--port", "8000", "--tp_size", str(request.gpus), "--max_seq_len",
            str(request.max_len), "--max_batch_size", str(max(1, request.max_batch)),
            "--kv_cache_free_gpu_memory_fraction", f"{share:g}"), port=8000, release=self.version)
