"""api/variant_fit.py: the by-memory-size line says where an engine that splits the model itself (Ollama) leaves
layers on the CPU on each size, and what that does to decode."""

from sizeup import api


def test_ollama_names_the_layers_each_size_leaves_to_the_cpu_and_the_decode_rate():
    est = api.estimate("qwen2.5-14b", device="rtx-4060-ti", engine="ollama", cpu="ryzen-7-7800x3d")
    sizes = {v.device: v for v in est.memory_variants}
    small, big = sizes["rtx-4060-ti-8gb"], sizes["rtx-4060-ti-16gb"]
    assert big.gpu_layers is None and 0 < small.gpu_layers < small.layers == 48
    assert small.decode_tokens_per_s < big.decode_tokens_per_s  # layers on the CPU: slower
    line = est.memory_variants_line
    assert f"on the 8 GB model {48 - small.gpu_layers} of 48 layers run on the CPU: decode " in line
    assert "with every layer on the GPU of the 16 GB model" in line
    data = est.to_dict()["memory_variants"]
    assert {d["device"]: d["gpu_layers"] for d in data}["rtx-4060-ti-8gb"] == small.gpu_layers


def test_without_a_cpu_the_split_sizes_decode_is_said_unknown():
    est = api.estimate("qwen2.5-14b", device="rtx-4060-ti", engine="ollama")
    assert "decode unknown (their CPU share is unpriced: name the host with --cpu NAME)" in est.memory_variants_line


def test_a_prefill_only_estimate_has_no_decode_rate_on_any_size():
    """--output 0 (a llama-bench pp row): no decode phase, so no rate to compare; the verdicts still hold."""
    est = api.estimate("llama-3-8b", device="apple-m2-ultra", engine="llama.cpp", quant="q4_k_m", prompt=512,
                       output=0)
    assert est.memory_variants and all(v.decode_tokens_per_s is None for v in est.memory_variants)
