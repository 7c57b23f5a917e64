"""MLC-LLM (engines/mlc.py): q4f16_1's layout and the runtimes it builds for."""

import pytest

from sizeup.engines import resolve
from sizeup.errors import ConfigError
from sizeup.formats import get_format
from sizeup.hardware.catalog import load_catalog


def test_q4f16_1_is_4_5_bits_per_weight():
    layout = get_format("mlc-q4f16_1").layout  # GroupQuantize: int4, group 32, one fp16 scale per group
    assert layout.bits + layout.group_bits / layout.group_size == 4.5


def test_backends():
    cat = load_catalog()
    assert resolve("mlc", cat.device("rx-7900-xtx"), backend="hip").backend is None  # ROCm is its native runtime
    with pytest.raises(ConfigError, match="metal"):
        resolve("mlc", cat.device("rtx-4090"), backend="metal")


def test_tensor_parallel_runs_nccls_ring_and_says_so():
    """mlc-ai/mlc-llm PR #1990: the all-reduce strategy defaults to "ring" (NCCL); no own latency, no worker time."""
    tp = resolve("mlc", load_catalog(include_user=False).device("a10g")).tensor_parallel("pcie", 4)
    assert tp.all_reduce_latency_s is None and tp.step_host_s is None and "NCCL's ring" in tp.notes[0]


def test_q4f16_ft_decode_instructions_bind_only_at_a_low_power_mode():
    """decode_alu_ops_per_weight@mlc-q4f16_ft: ~4.8 instructions per weight over all lanes. At AGX Orin 32GB's default
    MODE_30W (8 SMs at 612 MHz, nvpmodel_p3701_0004.conf) they outlast the weights' bytes; at MAX-N they do not."""
    from sizeup import api

    def decode(device):
        return api.estimate("llama-2-7b", device=device, engine="mlc", quant="mlc-q4f16_ft", prompt=16, output=128).decode

    maxn, mode30 = decode("jetson-agx-orin-32gb"), decode("jetson-agx-orin-32gb-30w")
    assert maxn.bound == "memory" and mode30.bound == "compute"
    assert 15 < mode30.tokens_per_s.typical < 24 < 35 < maxn.tokens_per_s.typical  # #412 / #532 measured ~19 in 30W


def test_q4f16_1_dequantization_binds_on_a100_not_on_desktop_cards():
    """decode_alu_ops_per_weight@mlc-q4f16_1 = 6 (MLC's _dequantize: shift, and, cast, subtract, multiply, then the
    multiply-add). An A100 SM has 64 FP32 lanes against HBM2e; a 4090 SM 128 against GDDR6X: only the A100 runs out of
    lanes before bytes."""
    from sizeup import api

    def decode(device):
        return api.estimate("llama-2-13b", device=device, engine="mlc", quant="mlc-q4f16_1", prompt=8, output=256).decode

    assert decode("a100-pcie-80gb").bound == "compute" and decode("rtx-4090").bound == "memory"


def test_metal_pays_a_command_buffer_per_kernel():
    """TVM's Metal runtime commits one command buffer per kernel: a decode step of llama-3-8b runs 12 kernels a layer
    (the ledger's 15 ops, q/k/v and gate/up fused) + the embedding, final norm and head, each at
    metal_command_buffer_s; CUDA replays a graph and adds nothing."""
    from sizeup import api
    from sizeup.engines.profile import engine_profile

    def est(device):
        return api.estimate("llama-3-8b", device=device, engine="mlc", quant="mlc-q4f16_1", batch=1, prompt=32,
                            output=256)

    note = next(a for a in est("apple-m1-pro").assumptions if a.startswith("MLC-LLM on Metal"))
    kernels = int(note.split(" kernels")[0].rsplit(" ", 1)[1].replace(",", ""))
    assert kernels == 32 * 12 + 3
    per = engine_profile("mlc").range("metal_command_buffer_s").typical
    assert f"{kernels * per * 1e3:,.1f} ms" in note
    assert not any(a.startswith("MLC-LLM on Metal") for a in est("rtx-4090").assumptions)
