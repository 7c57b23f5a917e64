"""KTransformers 0.4+ (engines/ktransformers.py): kt-kernel's routed experts on the host CPU, `--kt-num-gpu-experts N`
of each layer's experts on the GPU, the GPU part under SGLang's profile. The split is the model's own tensors: every
MoE layer's expert bytes times (E - N) / E in CPU RAM, the rest on the GPU."""

import pytest

from sizeup import api
from sizeup.errors import ConfigError
from sizeup.formats import get_format, tensor_bytes_map
from sizeup.ingest.load import load_model
from sizeup.price.memory import host_read_share

MODEL, GPU, CPU = "qwen3-30b-a3b-instruct-2507", "rtx-5090", "epyc-9355"


def _est(*opts, prompt=969, **kw):
    return api.estimate(MODEL, device=GPU, engine="ktransformers@0.5.2", quant="bf16", cpu=CPU, threads=16, batch=1,
                        prompt=prompt, output=128, engine_options=opts, **kw)


def _experts(arch):
    sizes = tensor_bytes_map(arch, get_format("bf16"))
    return sum(sizes[t.name] for t in arch.tensors() if t.role == "expert")


def test_the_routed_experts_split_by_count_between_cpu_ram_and_the_gpu():
    arch = load_model(MODEL)
    experts = _experts(arch)  # 128 routed experts in each of 48 layers
    none, some = _est(), _est("kt-num-gpu-experts=32")
    assert none.memory.cpu_bytes - some.memory.cpu_bytes == pytest.approx(experts * 32 / 128, rel=1e-6)
    assert some.memory.weights_bytes - none.memory.weights_bytes == pytest.approx(experts * 32 / 128, rel=1e-6)
    fmt = get_format("bf16")
    assert host_read_share(arch, fmt, None, arch.num_layers, 0.75) == pytest.approx(
        0.75 * host_read_share(arch, fmt, None, arch.num_layers))


def test_more_gpu_experts_decode_faster_and_the_estimate_says_how():
    rates = [_est(f"kt-num-gpu-experts={n}").decode.tokens_per_s.typical for n in (0, 28, 64, 96)]
    assert rates == sorted(rates) and rates[-1] > rates[0]
    text = " ".join(_est("kt-num-gpu-experts=28").assumptions)
    assert "78.1% of the routed experts" in text and CPU in text  # (128 - 28) / 128
    assert "routed uniformly" in text and "SGLang 0.5.3" in text


def test_every_expert_on_the_gpu_leaves_nothing_on_the_cpu():
    est = _est("kt-num-gpu-experts=128")
    assert not any("expert offload" in a for a in est.assumptions)


@pytest.mark.parametrize("value", ["-1", "2.5", "129"])
def test_a_bad_gpu_expert_count_is_a_one_line_error(value):
    with pytest.raises(ConfigError) as e:
        _est(f"kt-num-gpu-experts={value}")
    assert "kt-num-gpu-experts" in str(e.value) and "\n" not in str(e.value)


def test_a_release_before_the_sglang_integration_is_refused():
    with pytest.raises(ConfigError, match="ktransformers"):
        api.estimate(
            MODEL, device=GPU, engine="ktransformers@0.2.0", quant="bf16", cpu=CPU, prompt=10, output=10)


def test_a_prompt_past_the_gpu_prefill_threshold_copies_the_cpu_experts_per_chunk():
    """kt-kernel's layerwise prefill: each chunk copies the CPU-held experts ((E - N) / E of them) over the host link."""
    arch = load_model(MODEL)
    off = _est("kt-num-gpu-experts=28", prompt=3846)
    on = _est("kt-num-gpu-experts=28", "kt-gpu-prefill-token-threshold=1024", prompt=3846)
    assert on.prefill.tokens_per_s.typical > off.prefill.tokens_per_s.typical
    note = next(a for a in on.assumptions if "kt-gpu-prefill-token-threshold" in a)
    assert f"{_experts(arch) * 100 / 128 / 2**30:.2f} GiB" in note and "2 chunk(s)" in note
    below = _est("kt-num-gpu-experts=28", "kt-gpu-prefill-token-threshold=4096", prompt=3846)
    assert below.prefill.tokens_per_s.typical == pytest.approx(off.prefill.tokens_per_s.typical)
    with pytest.raises(ConfigError, match="kt-gpu-prefill-token-threshold"):
        _est("kt-gpu-prefill-token-threshold=-5")


def test_a_dense_model_is_refused_in_one_line():
    with pytest.raises(ConfigError, match="no routed experts") as e:
        api.estimate("llama-3.1-8b", device=GPU, engine="ktransformers", quant="bf16", cpu=CPU, prompt=10, output=10)
    assert "\n" not in str(e.value)
