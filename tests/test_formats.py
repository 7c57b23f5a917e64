"""Block-scaled FP4 (nvfp4, mxfp4), torchao weight-only and bitsandbytes formats: bytes from their layouts
(OCP Microscaling v1.0; NVIDIA NVFP4: 16-element blocks, FP8 E4M3 scales, an fp32 per-tensor scale)."""

from sizeup.formats import get_format, tensor_bytes_map
from sizeup.ingest.hf_config import load_model


def test_nvfp4_counts_its_block_and_tensor_scales():
    arch = load_model("llama-2-7b")
    sizes = tensor_bytes_map(arch, get_format("nvfp4"))
    # 4096 x 4096: 4 bits per weight, one byte per 16 weights, 4 bytes per tensor -> 4.5 bits per weight
    assert sizes["layers.0.attn.q_proj.weight"] == 4096 * 4096 // 2 + 4096 * 4096 // 16 + 4
    assert sizes["lm_head.weight"] == 32000 * 4096 * 2  # the LM head stays 16-bit


def test_mxfp4_quantizes_only_the_experts_of_a_moe():
    arch = load_model("gpt-oss-20b")
    sizes = tensor_bytes_map(arch, get_format("mxfp4"))
    expert = next(t for t in arch.tensors() if t.role == "expert")
    attention = next(t for t in arch.tensors() if t.role == "attention")
    # E2M1 plus one E8M0 byte per 32 weights: 4.25 bits
    assert sizes[expert.name] == expert.numel // 2 + expert.numel // 32
    assert sizes[attention.name] == attention.numel * 2
    dense = load_model("llama-2-7b")
    assert tensor_bytes_map(dense, get_format("mxfp4"))["layers.0.attn.q_proj.weight"] == 4096 * 4096 * 17 // 32


def test_gpt_oss_ships_in_mxfp4():
    from sizeup.api import estimate

    e = estimate("gpt-oss-20b", device="h100-sxm-80gb", engine="vllm")
    assert e.weights.id == "mxfp4"
    assert "quantization_config" in e.defaults["quant"]
    # 12.8 GiB: the MXFP4 experts and the bf16 rest (the checkpoint is 13.8 GB)
    assert 12.5 < e.memory.weights_bytes / 2 ** 30 < 13.1


def test_aliases():
    assert get_format("llm.int8").id == "int8-bnb"
    assert get_format("int4-wo").id == "int4-wo-g128"
    assert get_format("fp4-bnb").id == "bnb-fp4"
