"""What an engine's execution model states about scheduling and multi-GPU work, as plain records the pricing layer
reads: `Batching` (how requests are grouped into steps) and `TensorParallel` (how tensor parallelism runs where it
differs from NCCL's ring). Re-exported by engines/base.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sizeup.ranges import Range

__all__ = ["Batching", "OutputReserve", "TensorParallel"]


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputReserve:
    """An admission rule that keeps KV room for outputs still to come (workload/kv_reserve.py steps it): a request is
    admitted only where the pool holds what is used, its prompt and its whole output (at most `clip` tokens), the
    outputs of those admitted in the same scheduling round whole, and `ratio` x the outputs the running requests
    still have to generate (each at most `clip`). The ratio starts at `init` (and returns there when the engine is
    idle), falls by (init - floor) / decay_steps per decode step down to `floor`; when a decode step finds no free
    token, running requests are preempted (the fewest outputs first; recomputed when readmitted) until
    `headroom_steps` decode steps of the rest fit, and the ratio is set to (tokens they generated + ratio_steps x
    their count) / their whole outputs, at most 1."""

    init: float
    floor: float
    decay_steps: int
    headroom_steps: int = 1
    ratio_steps: int = 20
    clip: int = 4096

    @property
    def decay(self) -> float:
        return (self.init - self.floor) / max(self.decay_steps, 1) if self.init > self.floor else 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Batching:
    """How the engine groups requests into steps: the policy a throughput-under-load model schedules by."""

    scheduling: str
    """'static': one batch of requests runs prompt to last token before the next (transformers generate(), a
    plain TensorRT engine); 'continuous': requests join and leave the running batch at every step."""
    chunked_prefill: bool = False
    """Whether a long prompt is split over several steps, each mixed with the decodes of running requests."""
    max_batched_tokens: int | None = None
    """Tokens one step computes at most (vLLM max_num_batched_tokens, llama.cpp n_batch); None: no cap."""
    max_sequences: int | None = None
    """Sequences one step holds at most (vLLM max_num_seqs); None: no cap beyond memory."""
    physical_batch_tokens: int | None = None
    """Tokens one forward computes at once where a prompt is split into physical batches (llama.cpp n_ubatch)."""
    basis: str = ""
    mixed_steps: bool | None = None
    """Whether one step carries prompt tokens beside the decodes of running requests (vLLM V1, TensorRT-LLM's
    in-flight batching); False: prompts run in steps of their own (vLLM V0, SGLang); None: as `chunked_prefill`."""

    limits_per_micro_batch: bool = False
    """Whether `max_sequences` and `max_batched_tokens` bound each of a pipeline's micro-batches rather than all the
    running requests (TensorRT-LLM's in-flight batcher: pipeline_parallelism micro-batches in flight, its capacity
    scheduler sized `getMaxBatchSize() * mNumMicroBatches` and each micro-batch scheduled within max_batch_size and
    max_num_tokens: cpp/tensorrt_llm/batch_manager/trtGptModelInflightBatching.cpp, github.com/NVIDIA/TensorRT-LLM,
    read 2026-12-06); with `--pp N` the serving model then admits N times as many (workload/serving.py)."""

    steps_per_schedule: int = 1
    """Decode steps the scheduler runs per scheduling decision (vLLM V0 multi-step): prompts admitted between runs."""

    reserve_to_completion: bool = False
    """Whether a request is admitted only with KV room for its whole output (TensorRT-LLM's GUARANTEED_NO_EVICT:
    a started request is never paused), so the pool holds B x (I + O) tokens; False: pages are taken as tokens
    are generated (B x (I + O / 2) on average), a request preempted when the pool runs out."""

    first_token_lag_steps: int = 0
    """Steps after its own by which a step's tokens reach the client: 1 where the engine processes a step's output
    (detokenize, stream) while the next step runs (vLLM V0's async output processing, SGLang's overlap scheduler),
    so the first token leaves one step after the prefill that made it; 0: at the end of its own step."""

    schedule_ahead_steps: int = 0
    """Steps the engine's next batch is formed ahead of the step running (TensorRT-LLM's PyTorch executor, overlap
    scheduler: step n+1 is scheduled and launched before step n's outputs are processed), so a request that arrives
    while steps run back to back joins the step after the one already formed: that many steps beyond the residual
    of the step in flight, paid only where other requests keep the engine stepping (an idle engine takes it into the
    next step at once)."""

    preempts: bool = False
    """Whether the engine admits a request once its prompt's KV pages are free (no room kept for its output, beyond
    `kv_watermark` of the pool) and, when the running requests' next tokens find no free page, preempts the most
    recently admitted one, freeing its cache and computing its prompt and generated tokens again when it is
    readmitted (vLLM's scheduler, V0 and V1, recompute): stepped over a token pool by workload/scheduler.py."""

    kv_watermark: float = 0.0
    """The share of the KV pool a prompt must leave free to be admitted (vLLM V0's block manager: 0.01)."""

    output_reserve: OutputReserve | None = None
    """Where the engine admits a request only with room kept for outputs to come (`OutputReserve`, with `preempts`:
    stepped over the pool); None: on its prompt's tokens alone."""

    @property
    def mixes(self) -> bool:
        return self.chunked_prefill if self.mixed_steps is None else self.mixed_steps

    def to_dict(self) -> dict[str, Any]:
        return {"scheduling": self.scheduling, "chunked_prefill": self.chunked_prefill,
                "max_batched_tokens": self.max_batched_tokens, "max_sequences": self.max_sequences,
                "physical_batch_tokens": self.physical_batch_tokens, "basis": self.basis,
                "mixed_steps": self.mixes, "steps_per_schedule": self.steps_per_schedule,
                "limits_per_micro_batch": self.limits_per_micro_batch,
                "reserve_to_completion": self.reserve_to_completion,
                "first_token_lag_steps": self.first_token_lag_steps,
                "schedule_ahead_steps": self.schedule_ahead_steps, "preempts": self.preempts,
                "kv_watermark": self.kv_watermark,
                "output_reserve": None if self.output_reserve is None else {
                    "init": self.output_reserve.init, "floor": self.output_reserve.floor,
                    "decay_steps": self.output_reserve.decay_steps,
                    "headroom_steps": self.output_reserve.headroom_steps, "clip": self.output_reserve.clip}}


@dataclass(frozen=True, slots=True, kw_only=True)
class TensorParallel:
    """How an engine runs tensor parallelism over `--gpus N` where that differs from NCCL's ring driven by one
    process per GPU (the pricing layer's default, price/comm.py)."""

    all_reduce_latency_s: Range | None = None
    """Fixed latency of the engine's own all-reduce (one pass over peer memory, no ring steps), replacing the link's
    ring latency for the per-layer all-reduces; its bandwidth term stays the link's. None: NCCL's."""
    all_reduce_max_bytes: float | None = None
    """Messages of at least this many bytes go to NCCL's ring instead (vLLM: its IPC buffer's size); None: no cap."""
    all_reduce: str = "NCCL"
    """What runs the per-layer all-reduce, for the estimate's notes."""
    step_host_s: Range | None = None
    """Host time per step to drive the workers (a remote call per GPU), not hidden behind the GPU; None: none."""
    eager_launches: bool = False
    """Each GPU's process launches its kernels and collectives one by one from the host (no captured graph): where
    kernels are shorter than the host's launches, each collective waits for the slowest rank's host
    (workload/inference.py eager_rank_drift, data/efficiency/comm.yaml eager_rank_wait)."""
    notes: tuple[str, ...] = ()
