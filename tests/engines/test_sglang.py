"""SGLang (engines/sglang.py): its defaults as its server_args.py sets them, and TensorRT-LLM's serving defaults."""

from sizeup.api import estimate
from sizeup.engines import resolve
from sizeup.hardware.catalog import load_catalog

CATALOG = load_catalog()


def test_sglang_defaults_follow_server_args():
    a100 = resolve("sglang@0.3", CATALOG.device("a100-sxm-80gb"))
    assert a100.batching.max_batched_tokens == 8192  # chunked_prefill_size, >= 25,000 MB
    assert a100.batching.chunked_prefill and not a100.batching.mixes  # enable_mixed_chunk off
    assert a100.mem_fraction(1) == 0.88 and a100.mem_fraction(4) == 0.85 and a100.mem_fraction(8) == 0.81
    small = resolve("sglang@0.3", CATALOG.device("rtx-4090"))
    assert small.batching.max_batched_tokens == 2048  # 24 GB: under 25,000 MB


def test_sglang_pool_is_its_static_fraction_less_weights():
    e = estimate("llama-3.1-8b", device="a100-sxm-80gb", engine="sglang@0.3", quant="bf16")
    total = e.memory.weights_bytes + e.memory.kv_cache_bytes
    assert e.memory.max_concurrent_sequences and 0.8 < total / (80 * 2**30) < 0.9


def test_sglang_options_not_priced_are_said():
    e = estimate("llama-3.1-8b", device="a100-sxm-80gb", engine="sglang@0.3", quant="bf16",
                 engine_options=("disable-radix-cache",))
    assert any("radix cache" in a and "nothing priced changes" in a for a in e.assumptions)


def test_tensorrt_llm_runs_an_fp8_checkpoint_with_an_fp8_kv_cache_by_default():
    e = estimate("llama-3.1-8b", device="h100-sxm-80gb", engine="tensorrt-llm", quant="fp8")
    assert e.config.kv_dtype == "fp8" and "kv_cache_quant_algo" in e.defaults["kv_dtype"]
    named = estimate("llama-3.1-8b", device="h100-sxm-80gb", engine="tensorrt-llm", quant="fp8", kv_dtype="fp16")
    assert named.config.kv_dtype == "fp16" and "kv_dtype" not in named.defaults
    assert estimate("llama-3.1-8b", device="h100-sxm-80gb", engine="vllm", quant="fp8").config.kv_dtype == "fp16"
    trt = resolve("tensorrt-llm", CATALOG.device("h100-sxm-80gb")).batching
    assert (trt.max_batched_tokens, trt.max_sequences, trt.mixes) == (8192, 2048, True)  # llm_args.py defaults


def test_vllm_multi_step_divides_the_schedulers_host_time():
    from sizeup.ingest.hf_config import load_model

    h100, arch = CATALOG.device("h100-sxm-80gb"), load_model("llama-3.1-8b")
    one = resolve("vllm@0.6", h100).step_overhead(arch, True)
    ten = resolve("vllm@0.6", h100, settings={"num_scheduler_steps": 10}).step_overhead(arch, True)
    assert abs(ten.typical - one.typical / 10) < 1e-12


def test_decode_batches_above_the_graph_capture_size_launch_eagerly():
    """sglang server_args.py (0.5 series): cuda_graph_max_bs 256 at tp < 4 on a GPU of 60-160 GiB, 24 under 35 GiB;
    0.3/0.4: 160, 8 under 25,000 MB. A larger decode batch has no captured graph: the device kind's eager launch."""
    h100 = resolve("sglang@0.5.4", CATALOG.device("h100-sxm-80gb"))
    assert h100.graph_max_batch == 256
    assert h100.per_op_overhead(True, 256).typical == 5.0e-07  # decode_overhead_s: a replayed graph
    assert h100.per_op_overhead(True, 257) is None  # eager: the device kind's launch time
    assert resolve("sglang@0.5.4", CATALOG.device("rtx-4090")).graph_max_batch == 24
    assert resolve("sglang@0.4", CATALOG.device("rtx-4090")).graph_max_batch == 8
    assert resolve("sglang@0.4", CATALOG.device("a100-sxm-80gb")).graph_max_batch == 160
    own = resolve("sglang@0.5.4", CATALOG.device("h100-sxm-80gb"), settings={"cuda_graph_max_bs": 512})
    assert own.graph_max_batch == 512 and own.per_op_overhead(True, 300) is not None


def test_tensorrt_llm_graph_limit_only_where_stated():
    """trtllm-serve's LLM API default captures decode graphs up to 128 (llm_args.py `config.max_batch_size or 128`);
    not applied unless the run states it (the engine's rows are trtllm-bench / MLPerf runs)."""
    h100 = CATALOG.device("h100-sxm-80gb")
    assert resolve("tensorrt-llm@1.2", h100).graph_max_batch is None
    serve = resolve("tensorrt-llm@1.2", h100, settings={"cuda_graph_max_bs": 128})
    assert serve.per_op_overhead(True, 128) is not None and serve.per_op_overhead(True, 129) is None


def test_sglang_05_chunks_prompts_by_gpu_memory_tier():
    """sglang server_args.py (0.5 series): chunked_prefill_size 2048 under 35 GiB, 4096 under 60 GiB (A100 40GB, L40),
    8192 under 160 GiB; 0.3/0.4: 8192 for every GPU of 25,000 MB or more."""
    assert resolve("sglang@0.5.4", CATALOG.device("a100-sxm-40gb")).batching.max_batched_tokens == 4096
    assert resolve("sglang@0.4", CATALOG.device("a100-sxm-40gb")).batching.max_batched_tokens == 8192
    assert resolve("sglang@0.5.4", CATALOG.device("h100-sxm-80gb")).batching.max_batched_tokens == 8192
