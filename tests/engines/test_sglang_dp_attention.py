"""SGLang's --enable-dp-attention (`--engine-opt enable-dp-attention`, engines/sglang.py): every GPU of the replica an
attention DP rank (engines/attention_dp.py), and what server_args changes with it by release (data/engines/sglang.yaml
`dp_attention_*`, read from the 0.4.0-0.4.6 wheels and the 0.5.x server_args.py)."""

from __future__ import annotations

import pytest

from sizeup import api
from sizeup.engines import resolve
from sizeup.engines.launch import LaunchRequest
from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog

H200 = load_catalog(include_user=False).device("h200-sxm-141gb")
DP = {"enable_dp_attention": 1}


def test_each_rank_schedules_its_share_of_the_chunk_and_the_running_cap():
    plain = resolve("sglang@0.4.6", H200, settings={"max_running_requests": 100})
    dp = resolve("sglang@0.4.6", H200, settings={**DP, "max_running_requests": 100}).at_gpus(8)
    assert dp.attention_ranks == 8 and plain.at_gpus(8).attention_ranks == 1
    assert dp.batching.max_batched_tokens == plain.batching.max_batched_tokens  # chunk // dp_size on each of 8
    assert dp.batching.max_sequences == 96  # max_running_requests // dp_size on each rank
    early = resolve("sglang@0.4.0", H200, settings={**DP, "max_running_requests": 100}).at_gpus(8)
    assert early.batching.max_batched_tokens == 4 * plain.batching.max_batched_tokens  # chunk // 2 on each of 8
    assert early.batching.max_sequences == 800  # 0.4.0: every rank the whole cap
    assert early.graph_max_batch == 96 and not early.host_overlapped  # 0.4.0: graphs capped, overlap off
    # 0.4.6 cuda_graph_runner.py captures past 160 above 81,920 MiB only at dp_size 1
    assert dp.host_overlapped and dp.graph_max_batch == 160 and plain.at_gpus(8).graph_max_batch == 256


def test_the_admission_is_three_tenths_as_conservative():
    plain = resolve("sglang@0.5.3", H200).load_policy.output_reserve
    dp = resolve("sglang@0.5.3", H200, settings=DP).at_gpus(8).load_policy.output_reserve
    assert dp.init == pytest.approx(plain.init * 0.3) and dp.floor == pytest.approx(plain.floor * 0.3)


def test_the_memory_reserve_grows_with_the_ranks_and_graphs():
    plain = resolve("sglang@0.5.3", H200).reserved_mib(8)
    dp = resolve("sglang@0.5.3", H200, settings=DP).at_gpus(8)
    assert dp.reserved_mib(8) - plain == pytest.approx(512 * 8 * (3 + 1.5))  # 512 graphs > 300: 4.5 MiB a rank each
    tier = resolve("sglang@0.5.2", H200)
    assert resolve("sglang@0.5.2", H200, settings=DP).reserved_mib(8) - tier.reserved_mib(8) == pytest.approx(4096)


def test_the_launch_line_names_the_dp_size_and_the_flag():
    model = resolve("sglang@0.5.3", H200, settings=DP).at_gpus(8)
    args = model.launch(LaunchRequest(checkpoint="deepseek-ai/DeepSeek-V3", gpus=8, max_len=4096, max_batch=256,
                                      quant="fp8")).args
    assert args[args.index("--dp-size") + 1] == "8" and "--enable-dp-attention" in args


def test_releases_before_the_flag_was_read_are_refused_in_one_line():
    with pytest.raises(ConfigError) as refused:
        resolve("sglang@0.3", H200, settings=DP).at_gpus(8)
    assert "\n" not in str(refused.value) and "0.4" in str(refused.value)


def test_the_replica_holds_more_deepseek_requests_with_whole_weights_beside_the_experts():
    """MLA's latent sits on every TP rank, so eight ranks each holding their own requests hold more of them, though
    each GPU also holds the attention weights whole and a larger reserve."""
    common = {"device": "h200-sxm-141gb", "gpus": 8, "engine": "sglang@0.5.3", "quant": "fp8", "prompt": 1000,
              "output": 1000}
    tp = api.estimate("deepseek-v3", **common)
    dp = api.estimate("deepseek-v3", **common, engine_options=("enable-dp-attention",))
    assert dp.memory.weights_bytes > tp.memory.weights_bytes
    assert dp.memory.max_concurrent_sequences > tp.memory.max_concurrent_sequences
    assert any("attention DP ranks" in a for a in dp.assumptions)


def test_a_lone_request_must_fit_whole_in_one_ranks_pool():
    """The pool the serving steps read counts the replica's tokens (each GPU a share of the requests), but one
    request's cache sits whole on the rank that runs it: the longest context is one rank's, not eight ranks'."""
    common = {"device": "h200-sxm-141gb", "gpus": 8, "engine": "sglang@0.5.3", "quant": "fp8", "prompt": 1000,
              "output": 1000}
    tp = api.estimate("deepseek-v3", **common)
    dp = api.estimate("deepseek-v3", **common, engine_options=("enable-dp-attention",))
    assert dp.max_context <= tp.max_context  # MLA: the same whole latent per rank, a smaller pool beside whole weights


def test_on_one_gpu_the_option_says_only_its_side_effects_are_priced():
    one = api.estimate("llama-3.1-8b", device="h200-sxm-141gb", engine="sglang",
                       engine_options=("enable-dp-attention",))
    assert any("enable-dp-attention on one GPU: one attention DP rank" in n for n in one.memory.notes)
