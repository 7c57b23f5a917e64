"""TensorRT-LLM (data/engines/tensorrt-llm.yaml), its PyTorch backend: decode-only batches replayed from CUDA graphs
(`decode_overhead_s` per kernel) and the executor's host time per iteration (`step_overhead_s`); memory allocated
as the request needs it, attention through its fused kernels. In-flight batching schedules context (prompt) and
generation requests in the same iteration, up to max_num_tokens tokens and max_batch_size requests; an FP8
checkpoint (ModelOpt) carries an FP8 KV cache, which the engine follows by default.
"""

from __future__ import annotations

from sizeup.engines.base import Batching, ExecutionModel, engine


@engine("tensorrt-llm", "trtllm", "trt-llm")
class TensorRTLLM(ExecutionModel):
    FORMATS = ("bf16", "fp8", "awq-int4")
    NATIVE_FP8_ONLY = True
    ENGINE_OPTIONS = {"max-batch-size": "max_batch_size", "max-num-tokens": "max_num_tokens"}

    @property
    def batching(self) -> Batching:
        tokens = int(self.profile.value("max_num_tokens", 8192))
        seqs = int(self.profile.value("max_batch_size", 2048))
        return Batching(scheduling="continuous", chunked_prefill=False, mixed_steps=True, max_batched_tokens=tokens,
                        max_sequences=seqs,
                        basis=f"in-flight batching: context and generation requests in one iteration, at most "
                              f"max_num_tokens {tokens:,} tokens and max_batch_size {seqs:,} requests")

    def default_kv_dtype(self, weights: str) -> tuple[str, str] | None:
        if weights.startswith("fp8") and self.profile.value("fp8_checkpoint_kv_fp8", 1):
            return "fp8", ("TensorRT-LLM follows the checkpoint's KV format (KvCacheConfig dtype 'auto'): an FP8 "
                           "(ModelOpt) checkpoint states kv_cache_quant_algo FP8, so the KV cache is FP8")
        return None

    def option_notes(self) -> tuple[str, ...]:
        return ()
