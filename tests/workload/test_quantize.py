"""Weight formats from their block layouts, checked against real file sizes."""

import pytest

from sizeup.ingest.hf_config import load_model
from sizeup.workload.quantize import GGUF_BLOCKS, get_format, gguf_type, weight_bytes


def total(model, quant):
    return sum(weight_bytes(load_model(model), get_format(quant)).values())


@pytest.mark.parametrize("gtype, bits", [("Q4_0", 4.5), ("Q8_0", 8.5), ("Q4_K", 4.5), ("Q5_K", 5.5),
                                         ("Q6_K", 6.5625), ("Q2_K", 2.625), ("Q3_K", 3.4375)])
def test_gguf_bits_per_weight_from_block_layouts(gtype, bits):
    weights, size = GGUF_BLOCKS[gtype]
    assert size * 8 / weights == bits  # ggml-common.h block structs


def test_q4_k_m_file_size_matches_a_real_gguf():
    # Meta-Llama-3-8B Q4_K_M GGUF: 4,920,733,984 bytes (tensor data + ~8 MB of metadata and tokenizer)
    assert total("llama-3-8b", "q4_k_m") == pytest.approx(4_920_733_984, rel=0.005)


def test_q4_k_m_keeps_output_and_chosen_layers_at_q6_k():
    arch = load_model("llama-3-8b")
    fmt = get_format("q4_k_m")
    by_name = {t.name: t for t in arch.tensors()}
    assert gguf_type(by_name["lm_head.weight"], arch, fmt) == "Q6_K"
    assert gguf_type(by_name["layers.0.attn.v_proj.weight"], arch, fmt) == "Q6_K"  # first eighth of the layers
    assert gguf_type(by_name["layers.5.attn.v_proj.weight"], arch, fmt) == "Q4_K"
    assert gguf_type(by_name["layers.0.attn.q_proj.weight"], arch, fmt) == "Q4_K"
    assert gguf_type(by_name["layers.0.norm0.weight"], arch, fmt) == "F32"


def test_mxfp4_moe_gguf_of_gpt_oss_matches_the_published_file():
    """llama-quantize's MXFP4_MOE (src/llama-quant.cpp): experts MXFP4, the other matrices Q8_0 (the output too:
    2,880 is not a multiple of 256), router, biases, norms and sinks F32. bartowski's gpt-oss-20b-MXFP4.gguf: 12.1 GB
    (huggingface.co/bartowski/openai_gpt-oss-20b-GGUF); convert_hf_to_gguf.py --outtype bf16 (experts kept MXFP4,
    the rest bf16: `mxfp4`)
    writes total_size = 13.8G (github.com/danbev/learning-ai notes/llama.cpp/gpt-oss.md)."""
    assert total("gpt-oss-20b", "mxfp4_moe") == pytest.approx(12.1e9, rel=0.01)
    assert total("gpt-oss-20b", "mxfp4") == pytest.approx(13.8e9, rel=0.01)
    arch = load_model("gpt-oss-20b")
    fmt = get_format("mxfp4_moe")
    by_name = {t.name: t for t in arch.tensors()}
    types = {name: gguf_type(by_name[name], arch, fmt) for name in (
        "lm_head.weight", "embed_tokens.weight", "layers.0.attn.q_proj.weight", "layers.0.attn.sinks",
        "layers.0.mlp.gate.weight", "layers.0.mlp.experts.down_proj", "layers.0.mlp.experts.down_proj_bias")}
    assert types == {"lm_head.weight": "Q8_0", "embed_tokens.weight": "Q8_0", "layers.0.attn.q_proj.weight": "Q8_0",
                     "layers.0.attn.sinks": "F32", "layers.0.mlp.gate.weight": "F32",
                     "layers.0.mlp.experts.down_proj": "MXFP4", "layers.0.mlp.experts.down_proj_bias": "F32"}


def test_nf4_double_quantization_costs_0_127_bits_per_parameter():
    """QLoRA §3: blocks of 64 with an fp32 absmax = 0.5 bit/param; double quantization of the absmax
    (8-bit, blocks of 256) = 8/64 + 32/(64·256) = 0.127 bit/param."""
    arch = load_model("llama-2-7b")
    linear = sum(t.numel for t in arch.tensors() if t.role in ("attention", "mlp"))
    with_dq = weight_bytes(arch, get_format("nf4"))
    without = weight_bytes(arch, get_format("nf4-no-dq"))
    linear_dq = with_dq["attention"] + with_dq["mlp"]
    linear_plain = without["attention"] + without["mlp"]
    assert linear_dq * 8 / linear == pytest.approx(4.127, abs=0.001)
    assert linear_plain * 8 / linear == pytest.approx(4.5, abs=0.001)


def test_gptq_and_awq_count_scales_and_zeros():
    arch = load_model("llama-2-7b")
    linear = sum(t.numel for t in arch.tensors() if t.role in ("attention", "mlp"))
    awq = weight_bytes(arch, get_format("awq-int4"))
    # 4 bits + per group of 128: fp16 scale + 4-bit zero = 4 + 20/128 bits
    assert (awq["attention"] + awq["mlp"]) * 8 / linear == pytest.approx(4 + 20 / 128, rel=1e-6)
    assert awq["embedding"] == 32000 * 4096 * 2  # embeddings stay fp16
    gptq = weight_bytes(arch, get_format("gptq-int4"))
    assert gptq["mlp"] > awq["mlp"]  # plus g_idx


def test_fp8_halves_linear_weights():
    bf16, fp8 = total("llama-3-8b", "bf16"), total("llama-3-8b", "fp8")
    assert fp8 / bf16 == pytest.approx(0.56, abs=0.02)  # embeddings and LM head stay bf16


def test_unknown_format_lists_the_known_ones():
    from sizeup.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown quantization 'q9_z'"):
        get_format("q9_z")


def test_formats_live_below_ingest_and_keep_their_names_here():
    """The weight formats sit in `sizeup.formats`, which imports nothing of ingest; the job-level
    module re-exports the same objects."""
    import subprocess
    import sys

    import sizeup.formats as formats
    import sizeup.workload.quantize as quantize

    for name in ("WeightFormat", "FORMATS", "GGUF_BLOCKS", "LINEAR_ROLES", "get_format", "gguf_type", "tensor_bytes",
                 "tensor_bytes_map", "nf4_matrix_bytes"):
        assert getattr(quantize, name) is getattr(formats, name)
    code = "import sys, sizeup.formats; print(sorted(m for m in sys.modules if m.startswith('sizeup.')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "sizeup.ingest" not in loaded and "sizeup.workload" not in loaded, loaded
