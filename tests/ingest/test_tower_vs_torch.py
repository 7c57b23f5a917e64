"""The analytic tower ledger (ingest/tower_ops.py) against a trace of transformers' own module for the same
config on fake tensors (ingest/torch_trace.py): Whisper's encoder over its 3,000 mel frames, FLAN-T5's encoder
over a 128-token prompt, and LLaVA's CLIP vision tower over one 336 × 336 image. Matrix-product FLOPs (linears,
convolutions, attention) must be equal exactly; all FLOPs within 0.1% (elementwise conventions differ: GELU,
LayerNorm)."""

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from sizeup.ingest.families.registry import parse_config  # noqa: E402
from sizeup.ingest.torch_trace import trace_module  # noqa: E402
from sizeup.ingest.tower_ops import TowerInput, tower_ledger  # noqa: E402
from sizeup.ingest.trace_inputs import InputSpec  # noqa: E402
from tests.ingest.tower_check import assert_same_work  # noqa: E402

CONFIGS = Path(__file__).parent / "configs"


def test_whisper_tiny_encoder_equals_the_traced_whisper_encoder():
    data = json.loads((CONFIGS / "whisper-tiny.json").read_text())

    def factory():
        from transformers import WhisperConfig
        from transformers.models.whisper.modeling_whisper import WhisperEncoder

        config = WhisperConfig(**data)
        config._attn_implementation = "sdpa"
        return WhisperEncoder(config)

    traced = trace_module(factory, [InputSpec(shape=(1, 80, 3000))])
    analytic = tower_ledger(parse_config(data, "whisper-tiny"), TowerInput(batch=1, prompt=4))
    encoder = [o for o in analytic.ops if "cross_attn" not in o.scope]  # the decoder's K/V are not in the encoder
    assert_same_work(encoder, traced.ops)


def test_llava_clip_tower_equals_the_traced_clip_vision_model():
    data = json.loads((CONFIGS / "llava-1.5-7b-hf.json").read_text())

    def factory():
        from transformers import CLIPVisionConfig
        from transformers.models.clip.modeling_clip import CLIPVisionModel

        config = CLIPVisionConfig(**data["vision_config"])
        config._attn_implementation = "sdpa"
        return CLIPVisionModel(config)

    traced = trace_module(factory, [InputSpec(shape=(1, 3, 336, 336))])
    analytic = tower_ledger(parse_config(data, "llava"), TowerInput(batch=1, prompt=600, images=1))
    tower = [o for o in analytic.ops if "projector" not in o.scope]  # LlavaMultiModalProjector is not in CLIP
    assert_same_work(tower, traced.ops)


def test_flan_t5_encoder_over_the_prompt_equals_the_traced_t5_encoder():
    data = json.loads((CONFIGS / "flan-t5-xl.json").read_text())

    def factory():
        from transformers import T5Config, T5EncoderModel

        config = T5Config(**data)
        config._attn_implementation = "eager"
        return T5EncoderModel(config)

    traced = trace_module(factory, [InputSpec(shape=(1, 128), dtype="int64")])
    analytic = tower_ledger(parse_config(data, "flan-t5-xl"), TowerInput(batch=1, prompt=128))
    encoder = [o for o in analytic.ops if "cross_attn" not in o.scope]
    assert_same_work(encoder, traced.ops)
