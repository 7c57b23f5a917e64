"""The tower in an inference estimate (workload/towers.py, workload/inference.py): the encoder of an
encoder-decoder and the vision tower of a vision-language model land in prefill (TTFT) as their own term,
grow with the encoder length / the images, and leave every decode step as it was."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.families.llava import LLAMA_DEFAULTS
from sizeup.ingest.families.registry import parse_config
from sizeup.workload.inference import InferenceConfig, estimate_inference

CONFIGS = Path(__file__).parents[1] / "ingest" / "configs"


def _data(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


def _arch(name: str, **change):
    return parse_config({**_data(name), **change}, name)


@pytest.fixture(scope="module")
def h100():
    return load_catalog().device("h100")


def _est(arch, device, **cfg):
    return estimate_inference(arch, device, InferenceConfig(**cfg), limits=False)


def test_llava_ttft_grows_with_each_image_and_decode_does_not_move(h100):
    arch = _arch("llava-1.5-7b-hf")
    runs = [_est(arch, h100, prompt=2000, output=64, images=n) for n in (0, 1, 2, 3)]
    ttft = [r.prefill.latency_s.typical for r in runs]
    assert ttft == sorted(ttft) and len(set(ttft)) == 4
    assert runs[0].tower is None and [r.tower.inputs for r in runs[1:]] == [1, 2, 3]
    assert len({r.decode.latency_s for r in runs}) == 1  # the tower never runs in a decode step
    for r in runs[1:]:  # TTFT is the decoder's prefill plus the tower's own pass
        total = r.tower.decoder_latency_s + r.tower.latency_s
        assert r.prefill.latency_s.typical == pytest.approx(total.typical)


def test_llava_with_no_images_prices_as_its_text_only_decoder(h100):
    llava = _arch("llava-1.5-7b-hf")
    text = parse_config({**LLAMA_DEFAULTS, **_data("llava-1.5-7b-hf")["text_config"]}, "vicuna")
    with_tower, alone = _est(llava, h100, prompt=700, output=64), _est(text, h100, prompt=700, output=64)
    # the typical times are the decoder's; the calibrated ranges may differ, as they rest on the rows of each
    # architecture (price/ranges_table.py: an architecture no row ran widens its range)
    assert with_tower.prefill.latency_s.typical == alone.prefill.latency_s.typical
    assert with_tower.decode.latency_s.typical == alone.decode.latency_s.typical


def test_whisper_ttft_includes_the_encoder_and_grows_with_its_length(h100):
    short, full = _arch("whisper-small", max_source_positions=750), _arch("whisper-small")
    a, b = _est(short, h100, prompt=4, output=100), _est(full, h100, prompt=4, output=100)
    assert (a.tower.positions, b.tower.positions) == (750, 1500)
    assert a.tower.flops < b.tower.flops and a.prefill.latency_s.typical < b.prefill.latency_s.typical
    bare = _est(replace(full, tower=None), h100, prompt=4, output=100)
    assert b.prefill.latency_s.typical > bare.prefill.latency_s.typical
    assert b.decode.latency_s == bare.decode.latency_s  # per-step cost unchanged by the encoder


def test_t5_encoder_reads_the_prompt_and_the_decoder_starts_from_one_token(h100):
    arch = _arch("flan-t5-xl")
    short, long = _est(arch, h100, prompt=64, output=32), _est(arch, h100, prompt=480, output=32)
    assert (short.tower.positions, long.tower.positions) == (64, 480)
    assert short.prefill.latency_s.typical < long.prefill.latency_s.typical
    assert long.arch.cross_source == 480  # cross-attention over the prompt's encoder output
    assert long.memory.kv_cache_bytes > short.memory.kv_cache_bytes


def test_estimate_json_names_the_tower_term(h100):
    data = _est(_arch("llava-1.5-7b-hf"), h100, prompt=700, images=1).to_dict()
    prefill = data["prefill"]
    assert prefill["includes"] == ["decoder", "vision_tower"]
    terms = prefill["terms_s"]
    assert terms["decoder"]["typical"] + terms["vision_tower"]["typical"] == pytest.approx(prefill["ttft_s"]["typical"])
    assert data["tower"]["kind"] == "vision" and data["tower"]["positions_per_input"] == 577
    assert data["config"]["images"] == 1
    assert any("includes the vision tower" in a for a in data["assumptions"])


@pytest.mark.parametrize("name, cfg, message", [
    ("phi-2", {"images": 1}, "--images 1: phi-2 (phi) has no vision tower"),
    ("llava-1.5-7b-hf", {"images": 2, "prompt": 1000}, "do not fit in --prompt 1,000"),
    ("whisper-small", {"image_hw": (448, 448)}, "--image-size 448x448: whisper-small (whisper) has no vision tower"),
    ("llava-1.5-7b-hf", {"images": -1}, "--images -1: expected 0 or more"),
])
def test_images_the_model_cannot_take_are_one_line_errors(h100, name, cfg, message):
    with pytest.raises(ConfigError) as e:
        _est(_arch(name), h100, **cfg)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_t5_kv_cache_is_decoder_self_attention_over_its_own_tokens_plus_cross_attention_over_the_prompt(h100):
    # flan-t5-xl: 24 decoder layers, 32 heads of d_kv 64; fp16 cache (2 bytes); K and V
    arch, prompt, output, batch = _arch("flan-t5-xl"), 400, 32, 3
    e = _est(arch, h100, prompt=prompt, output=output, batch=batch)
    per_token = 24 * 2 * 32 * 64 * 2
    assert e.memory.kv_cache_bytes == batch * per_token * ((output + 1) + prompt)
    assert any("self-attention cache holds its own tokens" in a for a in e.assumptions)


def test_t5_encoder_activations_join_the_peak_with_its_output_kept(h100):
    arch = _arch("flan-t5-xl")
    short, long = _est(arch, h100, prompt=64, output=32), _est(arch, h100, prompt=480, output=32)
    assert long.memory.activations_bytes > short.memory.activations_bytes  # the encoder's s² bias
    # d_model 2048, 32 heads, gated d_ff 5120; H100 bf16 SDPA: the memory-efficient kernel takes the bias as a
    # float mask (no s² scores); the shared bias and one layer's mask are s² (32·t² each, batch 1)
    t, h = 480, 2048
    mlp = 4 * t * h + 3 * t * 5120  # four T·h (sizeup.price.tower_memory); gate, up and their product
    assert mlp > 3 * t * h + 3 * t * h  # wider than the attention stage
    assert long.memory.activations_bytes == 2 * (mlp + 2 * 32 * t * t)
    assert any("encoder activations" in a for a in long.assumptions)
