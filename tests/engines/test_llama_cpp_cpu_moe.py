"""llama.cpp's `--n-cpu-moe N` / `--cpu-moe` (engines/llama_cpp.py host_expert_layers, workload/offload.py): the
routed experts of the first N layers stay in CPU RAM and run there at decode; a prompt of 32 tokens or more copies
them to the GPU per physical batch (ggml op offload). Figures derived from the model's own tensors."""

import pytest

from sizeup import api
from sizeup.errors import ConfigError
from sizeup.formats import get_format, tensor_bytes_map
from sizeup.ingest.load import load_model
from sizeup.price.memory import host_read_share

GPU, CPU = "rtx-4070", "ryzen-7-7800x3d"


def _est(*opts, model="gpt-oss-20b", prompt=512, **kw):
    return api.estimate(model, device=GPU, engine="llama.cpp", quant="mxfp4", cpu=CPU, batch=1, prompt=prompt,
                        output=128, engine_options=opts, **kw)


def _expert_bytes(arch, layers):
    sizes = tensor_bytes_map(arch, get_format("mxfp4_moe"))  # llama.cpp's --quant mxfp4: the MXFP4_MOE GGUF
    return sum(sizes[t.name] for t in arch.tensors() if t.role == "expert" and t.layer < layers)


def test_experts_of_the_first_layers_move_to_cpu_ram():
    arch = load_model("gpt-oss-20b")
    base, moved = _est(), _est("n-cpu-moe=12")
    assert base.memory.weights_bytes - moved.memory.weights_bytes == _expert_bytes(arch, 12)
    assert moved.memory.cpu_bytes - base.memory.cpu_bytes == _expert_bytes(arch, 12)
    whole = _est("cpu-moe")
    assert base.memory.weights_bytes - whole.memory.weights_bytes == _expert_bytes(arch, arch.num_layers)


def test_decode_share_on_the_cpu_is_the_routed_experts_a_token_reads():
    """A token reads top-k / experts of each expert tensor: for gpt-oss-20b 4 of 32 experts, so the whole experts'
    share of what a token reads is far below their share of the weights' bytes."""
    arch = load_model("gpt-oss-20b")
    fmt = get_format("mxfp4")
    sizes = tensor_bytes_map(arch, fmt)
    read = {t.name: sizes[t.name] * (4 / 32 if t.role == "expert" else 1) for t in arch.tensors()
            if t.role not in ("embedding", "position")}
    experts = sum(v for t in arch.tensors() if t.role == "expert" for v in [read[t.name]])
    assert host_read_share(arch, fmt, None, arch.num_layers) == pytest.approx(experts / sum(read.values()))
    assert host_read_share(arch, fmt, None, 12) == pytest.approx(experts / 2 / sum(read.values()))
    assert host_read_share(arch, fmt, None, 0) == 0


def test_decode_slows_as_more_experts_stay_on_the_cpu():
    rates = [_est(f"n-cpu-moe={n}").decode.tokens_per_s.typical for n in (0, 6, 12, 24)]
    assert rates == sorted(rates, reverse=True) and rates[0] > rates[-1]
    assert _est("n-cpu-moe=0").decode.tokens_per_s.typical == pytest.approx(_est().decode.tokens_per_s.typical)
    note = next(a for a in _est("n-cpu-moe=12").assumptions if "expert offload" in a)
    assert "first 12 of 24 layers" in note and CPU in note


def test_a_prompt_copies_the_cpu_experts_to_the_gpu_per_physical_batch():
    """ggml op offload: at 32 tokens or more the GPU multiplies them after a copy over PCIe (4.0 x16 for the 4070:
    31.5 GB/s one way): 512 tokens are one physical batch of 512, 1,024 tokens two."""
    arch = load_model("gpt-oss-20b")
    moved = _expert_bytes(arch, 12)
    for prompt, copies in ((512, 1), (1024, 2)):
        note = next(a for a in _est("n-cpu-moe=12", prompt=prompt).assumptions if "host link" in a)
        assert f"{copies} physical batch" in note and f"{copies * moved / 31.5e9 * 1e3:,.0f} ms" in note
    short = _est("n-cpu-moe=12", prompt=16)  # under 32 tokens the CPU multiplies its experts itself
    assert not any("host link" in a for a in short.assumptions)


def test_a_dense_model_is_unchanged_and_bad_values_are_refused():
    dense = api.estimate("llama-3.1-8b", device=GPU, engine="llama.cpp", quant="q4_k_m", cpu=CPU, batch=1,
                         prompt=128, output=64, engine_options=("n-cpu-moe=8",))
    plain = api.estimate("llama-3.1-8b", device=GPU, engine="llama.cpp", quant="q4_k_m", cpu=CPU, batch=1,
                         prompt=128, output=64)
    assert dense.decode.tokens_per_s.typical == pytest.approx(plain.decode.tokens_per_s.typical)
    with pytest.raises(ConfigError, match="n-cpu-moe=-1"):
        _est("n-cpu-moe=-1")
    with pytest.raises(ConfigError, match="not an option"):  # Ollama places whole layers; it has no such option
        api.estimate("gpt-oss-20b", device=GPU, engine="ollama", quant="mxfp4", batch=1, prompt=64, output=64,
                     engine_options=("n-cpu-moe=4",))


def test_llama_cpp_mxfp4_is_the_mxfp4_moe_gguf_and_ollama_keeps_bf16():
    """llama.cpp's `--quant mxfp4` prices gpt-oss as its GGUF ships (MXFP4_MOE: experts MXFP4, other matrices Q8_0:
    11.27 GiB for gpt-oss-20b as llama-bench prints it); Ollama's own blob keeps the rest 16-bit (14 GB)."""
    llama = _est()
    assert llama.weights.id == "mxfp4_moe"
    assert any("--quant mxfp4: mxfp4_moe under llama.cpp" in a for a in llama.assumptions)
    ollama = api.estimate("gpt-oss-20b", device=GPU, engine="ollama", quant="mxfp4", batch=1, prompt=64, output=64)
    assert ollama.weights.id == "mxfp4"
