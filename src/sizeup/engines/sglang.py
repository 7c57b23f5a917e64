"""SGLang (data/engines/sglang.yaml): a static memory pool, a scheduler that runs prefill and decode batches apart,
chunked prefill, CUDA graphs for decode batches.

Memory: SGLang takes `mem_fraction_static` of the GPU's memory (by tensor-parallel size up to 0.4.7; 0.4.8-0.5.2 the
GPU's memory less a tier by memory and ranks, 0.4.5-0.4.7 above 80 GiB less 13 GiB or 18 GiB; from 0.5.3 less server_args' reserve for prefill activations and CUDA
graphs: `reserved_mib`) of the memory free at start for the weights and
the token pool of the KV cache (the radix cache's pages); what is left holds activations, CUDA graphs and the CUDA
context. `--engine-opt offline`: the offline engine (sglang.Engine, bench_offline_throughput), no HTTP front end. Scheduling: a prefill batch (up to chunked_prefill_size tokens, a longer prompt split into chunks) runs
as its own step between decode steps unless --enable-mixed-chunk; decode batches up to cuda_graph_max_bs replay a
CUDA graph.
Admission (`load_policy`): a request enters only where the token pool holds its prompt, its whole output and
new_token_ratio x the running requests' remaining outputs (schedule_policy.py PrefillAdder); the ratio decays per
decode step, and a decode step that finds no free token retracts requests (retract_decode) and resets it.
The radix cache reuses shared prefixes; random or ShareGPT prompts share none, so it saves nothing in
an estimate (and `--engine-opt disable-radix-cache` changes nothing priced).

Tensor parallelism (`SGLang.tensor_parallel`): its custom all-reduce, vLLM's copied (the TensorRT-LLM one-shot
kernel for releases 0.4.2-0.4.4), under vLLM's gates; NCCL's (RCCL's) ring elsewhere (engines/peer_all_reduce.py).

Attention data parallelism (`--engine-opt enable-dp-attention`: `--dp-size` the replica's GPUs, as 0.4.0-0.4.4 set it
and the DeepSeek recipes run it, `--tp 8 --dp 8`): every GPU an attention DP rank with its own scheduler process and
token pool, attending its own requests with the attention weights whole, the MoE over every rank's tokens
(engines/attention_dp.py prices the step, the pool and the weights). server_args changes with it, by release
(data `dp_attention_*`): each rank's chunked prefill is chunked_prefill_size // 2 (0.4.0-0.4.4) or // dp_size, the
schedule conservativeness x 0.3, max_running_requests split over the ranks (from 0.4.2), the decode graphs capped at
96 and the overlap scheduler off (0.4.0 / 0.4.1), and the memory reserve grown (0.4.8-0.5.2: 4 GiB; from 0.5.3: 3 MiB
per captured batch size and rank). Not priced apart: a dp size below tp (attention tensor-parallel inside each DP
group), the all-reduce SGLang ran after the MoE before its reduce-scatter path (0.4.x: an all-gather, the MoE's own
all-reduce over every token, then a slice: about twice the bytes of the reduce-scatter priced), the dense MLPs and
shared experts split over every rank's tokens in 0.4.x (priced whole on each rank's own), and the LM head split over
the ranks unless --enable-dp-lm-head (priced whole).
"""

from __future__ import annotations

from dataclasses import replace

from sizeup.engines.attention_dp import cache_share, pool_sequences
from sizeup.engines.base import Batching, ExecutionModel, TensorParallel, engine
from sizeup.engines.launch import Launch, LaunchRequest, dtype_flag
from sizeup.engines.peer_all_reduce import PeerAllReduce, peer_all_reduce
from sizeup.engines.policies import OutputReserve
from sizeup.engines.reserve import InferenceMemory, MemoryRequest, device_total_bytes
from sizeup.errors import ConfigError
from sizeup.units import GIB

__all__ = ["SGLang"]

NOT_PRICED = {"radix_cache_disabled": "disable-radix-cache: the radix cache reuses shared prefixes, which these "
                                      "requests do not have: nothing priced changes",
              "torch_compile": "enable-torch-compile: torch.compile of decode batches up to torch_compile_max_bs; "
                               "its kernel fusion is not priced (decode kernels as without it)",
              "flashinfer_disabled": "disable-flashinfer: Triton attention kernels instead of FlashInfer; priced as "
                                     "the same fused attention"}


SGLANG_QUANTIZATION = {"fp8": "fp8", "awq-int4": "awq"}
"""`--quantization` of a planned weight format (sglang server_args QUANTIZATION_CHOICES)."""

SGLANG_ALL_REDUCE = PeerAllReduce(name="SGLang custom all-reduce")
"""vLLM's gates (sglang custom_all_reduce.py: world sizes 2, 4, 6, 8; full NVLink, or two PCIe GPUs with P2P)."""


@engine("sglang")
class SGLang(ExecutionModel):
    FORMATS = ("bf16", "fp8", "awq-int4")
    NATIVE_FP8_ONLY = True
    ENGINE_OPTIONS = {"disable-radix-cache": "radix_cache_disabled", "enable-torch-compile": "torch_compile",
                      "disable-flashinfer": "flashinfer_disabled", "chunked-prefill-size": "chunked_prefill_size",
                      "mem-fraction-static": "mem_fraction_static", "max-running-requests": "max_running_requests",
                      "enable-mixed-chunk": "mixed_chunk",
                      "cuda-graph-max-bs": "cuda_graph_max_bs", "offline": "offline_frontend",
                      "schedule-conservativeness": "schedule_conservativeness",
                      "enable-dp-attention": "enable_dp_attention"}
    SWITCHES = frozenset({"disable-radix-cache", "enable-torch-compile", "disable-flashinfer", "enable-mixed-chunk",
                          "offline", "enable-dp-attention"})
    BATCH_CAP_OPTION = "max-running-requests"

    def _chunk(self) -> int:
        """chunked_prefill_size: the run's own, else the release's default for the GPU's memory."""
        own = self.profile.values.get("chunked_prefill_size")
        if own is not None:
            return int(own)
        mib = device_total_bytes(self.device) / 2**20
        small = self.profile.value("chunked_prefill_small_gpu_mib", 25_000)
        large = self.profile.value("chunked_prefill_large_gpu_mib", 0)
        if mib < small:
            return int(self.profile.value("chunked_prefill_size.small_gpu", 2048))
        if mib < self.profile.value("chunked_prefill_mid_gpu_mib", 0):
            return int(self.profile.value("chunked_prefill_size.mid_gpu", 4096))
        if large and mib >= large:
            return int(self.profile.value("chunked_prefill_size.large_gpu", 16384))
        return int(self.profile.value("chunked_prefill_size.default", 8192))

    GRAPH_TIERS = ("20480", "25000", "35840", "61440", "92160", "98304", "163840")
    """GPU memory bounds (MiB) of server_args' cuda_graph_max_bs tiers; the data states the size below each."""

    @property
    def graph_max_batch(self) -> int | None:
        """cuda_graph_max_bs: the run's own, else the release's default for the GPU's memory and the replica's
        tensor-parallel size (`at_gpus`: the 0.5 series captures larger graphs at tp >= 4, keys `.tp4`). Larger
        decode batches run eagerly."""
        own = self.profile.values.get("cuda_graph_max_bs")
        if own is not None:
            return int(own) or None
        graphs = self._default_graph_bs(int(self.profile.value("tensor_parallel_size", 1)))
        cap = int(self.profile.value("dp_attention_graph_max_bs", 0)) if self.dp_attention else 0
        return min(graphs, cap) if cap else graphs

    dp_attention = property(lambda self: bool(self.profile.value("enable_dp_attention", 0)))
    """--enable-dp-attention (`--engine-opt enable-dp-attention`): every GPU of the replica an attention DP rank."""

    def per_op_overhead(self, decode: bool, tokens: int | None = None):
        """As base.py, the captured graphs judged against one DP rank's batch under attention data parallelism (each
        rank's scheduler replays its own graph, padded to the largest rank's batch)."""
        ranks = self.attention_ranks
        return super().per_op_overhead(decode, -(-tokens // ranks) if tokens and ranks > 1 else tokens)

    def _default_graph_bs(self, tp: int) -> int:
        """server_args' cuda_graph_max_bs for this GPU's memory at tensor-parallel size `tp`."""
        mib = device_total_bytes(self.device) / 2**20
        wide = ".tp4" if tp >= 4 else ""
        values = self.profile.values
        for tier in self.GRAPH_TIERS:
            key = f"cuda_graph_max_bs.below_{tier}"
            if mib < float(tier) and key in values:
                return int(values.get(key + wide, values[key]))
        return int(values.get("cuda_graph_max_bs.large_gpu" + wide, values.get("cuda_graph_max_bs.large_gpu", 160)))

    def at_gpus(self, gpus: int) -> SGLang:
        """This model for a replica of `gpus` GPUs (tensor parallel): server_args sizes the captured decode graphs by
        tp size; the same object where the size does not change, so its memo of priced phases is kept."""
        tp = max(int(gpus), 1)
        model = self
        if self.dp_attention:  # --dp-size tp: each GPU an attention DP rank (engines/attention_dp.py)
            if not self.profile.value("dp_attention", 0):
                raise ConfigError(f"--engine-opt enable-dp-attention: {self.label} predates the releases read with "
                                  "--enable-dp-attention (from 0.4.0); name sglang@0.4 or later")
            model = self._with_setting("attention_dp_ranks", tp)
        if tp == int(model.profile.value("tensor_parallel_size", 1)):
            return model
        wider = model._with_setting("tensor_parallel_size", tp)
        return model if wider.graph_max_batch == model.graph_max_batch else wider

    def _rank_chunk(self) -> int:
        """One DP rank's chunked_prefill_size under attention data parallelism (server_args: // 2 up to 0.4.4, else
        // dp_size); the chunk itself otherwise."""
        chunk, ranks = self._chunk(), self.attention_ranks
        if ranks <= 1 or chunk <= 0:
            return chunk
        return chunk // (int(self.profile.value("dp_attention_chunk_divisor", 0)) or ranks)

    def _running_cap(self) -> int | None:
        """The replica's max_running_requests: under attention data parallelism each rank's scheduler takes
        max_running_requests // dp_size (from 0.4.2; 0.4.0 / 0.4.1 each rank the whole cap)."""
        running, ranks = self.profile.values.get("max_running_requests"), self.attention_ranks
        if not running or ranks <= 1:
            return int(running) if running else None
        if self.profile.value("dp_attention_running_split", 1):
            return max(int(running) // ranks, 1) * ranks
        return int(running) * ranks

    @property
    def host_overlapped(self) -> bool:
        """The overlap scheduler, off under attention data parallelism in 0.4.0 / 0.4.1 (`dp_attention_overlap`)."""
        off = self.dp_attention and not self.profile.value("dp_attention_overlap", 1)
        return bool(self.profile.value("host_overlap", 1)) and not off

    def host_floor(self, requests: float, gpus: int = 1):
        """As base.py; under attention data parallelism each DP rank's scheduler process walks its own share."""
        ranks = max(int(gpus), 1) if self.dp_attention else 1
        return super().host_floor(requests / ranks, gpus)

    @property
    def batching(self) -> Batching:
        chunk, ranks = self._rank_chunk(), self.attention_ranks
        mixed = bool(self.profile.value("mixed_chunk", 0))
        running = self._running_cap()
        return Batching(scheduling="continuous", chunked_prefill=chunk > 0, mixed_steps=mixed,
                        max_batched_tokens=chunk * ranks if chunk > 0 else None,
                        max_sequences=int(running) if running else None,
                        basis=(f"{ranks} attention DP ranks, each its own scheduler: " if ranks > 1 else "")
                              + f"SGLang scheduler: prefill batches of at most chunked_prefill_size {chunk:,} tokens "
                              + ("mixed into decode batches (--enable-mixed-chunk)" if mixed else
                                 "run apart from decode batches (enable_mixed_chunk off by default), before decode "
                                 "while prompts wait")
                              + f"; running requests bounded by the token pool; decode batches above "
                                f"cuda_graph_max_bs {self.graph_max_batch or 0:,} launched eagerly")

    @property
    def load_policy(self) -> Batching:
        """`batching` with the scheduler's admission (data `kv_output_reserve`): new_token_ratio's start, floor and
        decay steps, scaled by --schedule-conservativeness as scheduler.py does (init = min(0.7 c, 1) from 0.4, the
        floor min(init x 0.14, 1), 0.2-0.3: min(0.1 c, 1)), the retract headroom, the steps the reset ratio allows for
        and the clip of a request's output estimate."""
        policy = super().load_policy
        if not self.profile.value("kv_output_reserve", 0):
            return policy
        value = self.profile.value
        c = float(self.profile.values.get("schedule_conservativeness", 1.0))
        if self.dp_attention:  # server_args: schedule_conservativeness x 0.3 with --enable-dp-attention
            c *= self.profile.value("dp_attention_conservativeness", 0.3)
        base_init, base_floor = value("new_token_ratio_init", 0.7), value("new_token_ratio_min", 0.098)
        if value("new_token_ratio_init_scaled", 1):  # 0.4+: init = min(0.7 c, 1), floor = min(init x 0.14, 1)
            init = min(base_init * c, 1.0)
            floor = min(init * base_floor / base_init, 1.0)
        else:  # 0.2-0.3: the initial ratio unscaled, the floor min(0.1 c, 1)
            init, floor = base_init, min(base_floor * c, 1.0)
        rule = OutputReserve(init=init, floor=floor, decay_steps=int(value("new_token_ratio_decay_steps", 600)),
                             headroom_steps=int(value("retract_headroom_steps", 1)),
                             ratio_steps=int(value("retract_ratio_steps", 20)),
                             clip=int(value("clip_max_new_tokens", 4096)))
        return replace(policy, preempts=True, output_reserve=rule)

    def mem_fraction(self, tp: int, pp: int = 1) -> float:
        """mem_fraction_static: the run's own; from 0.5.3 (`mem_fraction_reserve` 1) the GPU's memory less server_args'
        reserve for activations and CUDA graphs, as a fraction (`reserved_mib`; 0.4.8-0.5.2 a tier by the GPU's memory
        and the ranks); up to 0.4.7 a figure by tp size, except above 80 GiB in 0.4.5-0.4.7 (`_large_gpu_fraction`)."""
        return self._static(tp, pp)[0]

    def _static(self, tp: int, pp: int) -> tuple[float, float | None]:
        """(mem_fraction_static, the reserve in MiB it was derived from: None where it was not)."""
        own = self.profile.values.get("mem_fraction_static")
        if own is not None:
            return float(own), None
        reserve = self.reserved_mib(tp, pp)
        if reserve is not None:
            mib = device_total_bytes(self.device) / 2**20
            return round((mib - reserve) / mib, 3), reserve
        large = self._large_gpu_fraction()
        if large is not None:
            return round(large, 3), None
        for size, key in ((16, "tp16"), (8, "tp8"), (4, "tp4"), (2, "tp2")):
            if tp >= size:
                return self.profile.value(f"mem_fraction_static.{key}", 0.88), None
        return self.profile.value("mem_fraction_static.tp1", 0.88), None

    def _large_gpu_fraction(self) -> float | None:
        """0.4.5-0.4.7 server_args above 80 GiB (`mem_fraction_large_gpu_above_mib`; None below it or in other
        releases, the fraction then by tp size): 0.4.5-0.4.6 the GPU's memory less 13 GiB
        (`mem_fraction_large_gpu_reserve_mib`); 0.4.7 0.88, above 96 GiB min(0.88 + 48 GiB x 0.12 / gpu_mem, the memory
        less 18 GiB) (`mem_fraction_large_gpu_headroom_*`), 0.79 on an NVIDIA GPU above 180,000 MiB."""
        value, mib = self.profile.value, device_total_bytes(self.device) / 2**20
        above = value("mem_fraction_large_gpu_above_mib", 0)
        if not above or mib <= above:
            return None
        huge = value("mem_fraction_huge_gpu_above_mib", 0)
        if huge and mib > huge and self.device.vendor == "nvidia":
            return value("mem_fraction_huge_gpu", 0.79)
        whole = (mib - value("mem_fraction_large_gpu_reserve_mib", 13312)) / mib
        headroom = value("mem_fraction_large_gpu_headroom_mib", 0)
        if not headroom:
            return whole
        base = value("mem_fraction_static.tp1", 0.88)  # 0.4.7: 0.88 above 80 GiB at any tp size
        if mib <= value("mem_fraction_large_gpu_headroom_above_mib", 98304):
            return base
        return min(base + headroom * (1 - base) / mib, whole)

    def _reserve_terms(self) -> dict[str, float]:
        """server_args' reserve terms (data/engines/sglang.yaml `mem_reserve_*`, MiB)."""
        value = self.profile.value
        return {"base": value("mem_reserve_base_mib", 512), "token": value("mem_reserve_per_prefill_token_mib", 1.5),
                "graph": value("mem_reserve_per_graph_batch_mib", 2), "ranks": value("mem_reserve_per_8_ranks_mib", 1024),
                "floor": value("mem_reserve_floor_mib", 10240), "above": value("mem_reserve_floor_above_mib", 61440)}

    def reserved_mib(self, tp: int, pp: int = 1) -> float | None:
        """server_args' memory reserve (MiB) outside mem_fraction_static from 0.5.3 (None before): a constant for the
        attention backend's metadata, 1.5 MiB per token of a chunked-prefill step (at least 2,048 tokens) for its
        activations, 2 MiB per captured decode-graph batch size, 1 GiB per 8 ranks of tp x pp (server_args:
        `tp_size * pp_size / 8 * 1024`), at least 10 GiB on a GPU above 60 GiB (`_reserve_terms`); 0.4.8-0.5.2
        (`mem_fraction_tiers`) a tier by the GPU's memory plus a share per rank (`_tier_reserve_mib`); None up to
        0.4.7."""
        if self.profile.value("mem_fraction_tiers", 0):
            dp = self.profile.value("mem_tier_reserve_dp_attention_gib", 0) * 1024 if self.dp_attention else 0
            return self._tier_reserve_mib(tp * pp) + dp
        if not self.profile.value("mem_fraction_reserve", 0):
            return None
        t = self._reserve_terms()
        graph = self.profile.values.get("cuda_graph_max_bs")
        graph = int(graph) if graph is not None else self._default_graph_bs(tp)
        chunk = self._chunk()
        step = chunk if chunk > 0 else self.profile.value("max_prefill_tokens", 16384)
        reserve = t["base"] + t["token"] * max(step, 2048) + t["graph"] * graph + t["ranks"] * tp * pp / 8
        ranks = tp if self.dp_attention else 1  # --dp-size tp
        if ranks > 1:  # server_args: DP attention's padding, more above 300 captured sizes
            reserve += graph * ranks * (self.profile.value("mem_reserve_dp_per_graph_batch_rank_mib", 3)
                                        + (self.profile.value("mem_reserve_dp_large_graph_mib", 1.5) if graph > 300
                                           else 0))
        if device_total_bytes(self.device) / 2**20 > t["above"]:
            reserve = max(reserve, t["floor"])
        return reserve

    TIERS = ("35840", "92160", "163840")
    """GPU memory bounds (MiB) of 0.4.8-0.5.2's reserve tiers (`mem_tier_reserve_gib.below_*`, else `.large_gpu`)."""

    def _tier(self) -> str:
        mib = device_total_bytes(self.device) / 2**20
        return next((f"below_{t}" for t in self.TIERS if mib < float(t)), "large_gpu")

    def _tier_reserve_mib(self, ranks: int) -> float:
        """0.4.8-0.5.2 server_args: reserved_mem = (a + b x tp x pp) GiB by the GPU's memory tier."""
        tier, value = self._tier(), self.profile.value
        return (value(f"mem_tier_reserve_gib.{tier}", 0.0) + value(f"mem_tier_reserve_per_rank_gib.{tier}", 0.0)
                * ranks) * 1024

    def _reserve_formula(self) -> str:
        """The reserve's formula as the note prints it, from the data's terms."""
        if self.profile.value("mem_fraction_tiers", 0):
            tier, value = self._tier(), self.profile.value
            return (f"{value(f'mem_tier_reserve_gib.{tier}', 0.0):g} + "
                    f"{value(f'mem_tier_reserve_per_rank_gib.{tier}', 0.0):g} x tp x pp GiB for this GPU's memory")
        t = self._reserve_terms()
        return (f"{t['base']:,g} + {t['token']:g} x max(chunked-prefill size, 2,048) + {t['graph']:g} x cuda_graph_max_bs + "
                f"{t['ranks']:,g} x tp x pp / 8, at least {t['floor']:,g} on a GPU above {t['above'] / 1024:g} GiB")

    def memory(self, req: MemoryRequest) -> InferenceMemory:
        """The token pool: mem_fraction_static of the memory free when the server starts, less the weights
        (model_runner.py profile_max_num_token: rest = free after loading - total_gpu_memory x (1 - fraction), with
        total_gpu_memory the free memory init_torch_distributed measured: the GPU less its CUDA context); activations
        and CUDA graphs beside it."""
        fraction, reserve = self._static(req.tp, req.pp)
        start = min(req.usable.typical, device_total_bytes(req.device))
        static = start * fraction
        kv_seq = req.kv_per_sequence(1)
        pool = int(static - req.weights_bytes)
        ranks = self.attention_ranks  # attention DP: each rank's pool whole caches of its own requests
        rows = -(-req.batch // ranks)
        activations = req.activation_peak(min(self._rank_chunk() or req.prompt, rows * req.prompt), rows)
        outside = device_total_bytes(req.device) - static
        # attention DP: a GPU's share of the requests' whole caches, spread evenly (so the pool over it counts the
        # replica's tokens, as tensor parallelism's does)
        needed = int(kv_seq / cache_share(req.arch, req.tp) * req.batch / ranks) if ranks > 1 else kv_seq * req.batch
        concurrency = pool_sequences(max(pool, 0) // kv_seq, req.arch, req.tp, ranks) if kv_seq else None
        running = self._running_cap()
        if running and concurrency is not None:
            concurrency = min(concurrency, int(running))
        busiest = int(kv_seq / cache_share(req.arch, req.tp) * rows) if ranks > 1 else needed  # a rank's own, whole
        fits = pool >= busiest and pool > 0 and activations <= outside and static <= req.usable.typical + outside
        notes = (f"SGLang takes mem_fraction_static {fraction:.3f} of the memory free when it starts "
                 f"({start / GIB:,.1f} GiB, the GPU less its CUDA context: {static / GIB:,.1f} GiB) for weights and "
                 f"the KV token pool ({max(pool, 0) / GIB:,.1f} GiB); activations, CUDA graphs and the context use "
                 f"the rest ({outside / GIB:,.1f} GiB)"
                 + (f": server_args' GPU memory less its reserve for activations and CUDA graphs, {reserve:,.0f} MiB at "
                    f"tp {req.tp}, pp {req.pp} ({self._reserve_formula()})" if reserve is not None else "")
                 + (f"; {ranks} attention DP ranks (--enable-dp-attention), each pool whole caches of its own "
                    f"requests" if ranks > 1 else
                    "; --enable-dp-attention on one GPU: one attention DP rank, so only what server_args sets with it "
                    "is priced (schedule conservativeness x 0.3, its memory reserve, 0.4.0's graph cap)"
                    if self.dp_attention else ""),)
        return InferenceMemory(weights_bytes=req.weights_bytes, kv_cache_bytes=max(pool, 0),
                               kv_cache_needed_bytes=needed, activations_bytes=activations, overhead_bytes=0,
                               usable_bytes=req.usable, fits=fits, cpu_bytes=req.cpu_weights_bytes,
                               max_concurrent_sequences=concurrency, notes=notes)

    def tensor_parallel(self, link_kind: str, gpus: int) -> TensorParallel | None:
        return peer_all_reduce(self, link_kind, gpus, SGLANG_ALL_REDUCE)

    def front_floor(self, requests: float):
        """The HTTP server process's host time per iteration (`frontend_per_token_s` x the running requests): its
        TokenizerManager (one process, tokenizer_worker_num 1) takes every request's token of the iteration from the
        detokenizer and the OpenAI adapter builds and streams a chunk for it, pipelined with the scheduler; the
        offline engine streams nothing: None."""
        front = None if self.offline else self.profile.range("frontend_per_token_s")
        return None if front is None or front.high <= 0 else front.scale(max(requests, 0.0))

    def request_overhead(self):
        """The HTTP server's per-request latency (base.py); the offline engine has no HTTP server: None."""
        return None if self.offline else super().request_overhead()

    def request_intake(self):
        """The server process's busy time per request it takes in; the offline engine is handed every prompt in one
        call before it runs: None."""
        return None if self.offline else super().request_intake()

    def option_notes(self) -> tuple[str, ...]:
        notes = tuple(note for key, note in NOT_PRICED.items() if self.profile.values.get(key))
        if self.offline:
            notes += ("--engine-opt offline: SGLang's offline engine (sglang.Engine.generate over the whole list, "
                      "bench_offline_throughput): every prompt handed over in one call, no HTTP server (no intake "
                      "queue, no per-request latency outside the steps); its scheduler's host time as served; "
                      f"{self.load_rule()}",)
        return notes

    def launch(self, request: LaunchRequest) -> Launch:
        """`python3 -m sglang.launch_server` on its default port 30000 with the plan's tensor-parallel size, longest
        request, static memory fraction (the one the plan priced at this tp), running-request cap and weight
        format, and `--enable-metrics` for the autoscaler's series (docs/references/production_metrics.md)."""
        args = ["--model-path", request.checkpoint, "--host", "0.0.0.0", "--port", "30000", "--tp",
                str(request.gpus), "--context-length", str(request.max_len), "--mem-fraction-static",
                f"{self.mem_fraction(request.gpus):.3f}", "--max-running-requests", str(max(1, request.max_batch))]
        if self.dp_attention:
            args += ["--dp-size", str(request.gpus), "--enable-dp-attention"]
        if request.quant in SGLANG_QUANTIZATION:
            args += ["--quantization", SGLANG_QUANTIZATION[request.quant]]
        args += dtype_flag(request.quant) + ["--enable-metrics"]
        return Launch(command=("python3", "-m", "sglang.launch_server"), args=tuple(args), port=30000,
                      release=self.version)
