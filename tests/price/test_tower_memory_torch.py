"""The tower activation count (sizeup.price.tower_memory) against PyTorch: transformers 5's Whisper encoder and
CLIP vision tower, scaled down from the real whisper-small and llava-1.5-7b configs, run in bf16 on the CPU
with every tensor storage alive counted op by op (a storage freed when the last tensor on it dies)."""

import json
import weakref
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils._pytree import tree_flatten  # noqa: E402

from sizeup.ingest.families.registry import parse_config  # noqa: E402
from sizeup.ingest.tower_ops import TowerInput  # noqa: E402
from sizeup.price.tower_memory import tower_activations  # noqa: E402

CONFIGS = Path(__file__).parents[1] / "ingest" / "configs"
SMALL = {"hidden": 64, "heads": 4, "inter": 256, "layers": 2}


class LiveBytes(TorchDispatchMode):
    """The largest sum of live storages over the ops run under it (storages in `skip` not counted)."""

    def __init__(self, skip: set[int]):
        super().__init__()
        self.skip, self.live, self.total, self.peak = skip, {}, 0, 0

    def _release(self, ptr: int) -> None:
        rec = self.live[ptr]
        rec[1] -= 1
        if rec[1] == 0:
            self.total -= rec[0]
            del self.live[ptr]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor):
                continue
            storage = t.untyped_storage()
            ptr = storage.data_ptr()
            if ptr in self.skip or storage.nbytes() == 0:
                continue
            if ptr not in self.live:
                self.live[ptr] = [storage.nbytes(), 0]
                self.total += storage.nbytes()
            self.live[ptr][1] += 1
            weakref.finalize(t, self._release, ptr)
        self.peak = max(self.peak, self.total)
        return out


def measured_peak(model, x) -> int:
    skip = {p.untyped_storage().data_ptr() for p in (*model.parameters(), *model.buffers(), x)}
    mode = LiveBytes(skip)
    with torch.no_grad(), mode:
        model(x)
    return mode.peak


def _json(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_whisper_encoder_matches_torch(attention):
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    data = {**_json("whisper-small"), "d_model": SMALL["hidden"], "encoder_attention_heads": SMALL["heads"],
            "decoder_attention_heads": SMALL["heads"], "encoder_ffn_dim": SMALL["inter"],
            "decoder_ffn_dim": SMALL["inter"], "encoder_layers": SMALL["layers"], "decoder_layers": SMALL["layers"],
            "max_source_positions": 100}
    config = WhisperConfig(**data)
    config._attn_implementation = attention
    torch.manual_seed(0)
    encoder = WhisperEncoder(config).to(torch.bfloat16).eval()
    mel = torch.randn(2, data["num_mel_bins"], 200, dtype=torch.bfloat16)
    counted = tower_activations(parse_config(data, "whisper-small-scaled"), TowerInput(batch=2, prompt=4),
                                act_bytes=2, tp=1, fused=attention == "sdpa")
    assert counted.peak_bytes == pytest.approx(measured_peak(encoder, mel), rel=0.05)


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
@pytest.mark.parametrize("images", [1, 3])
def test_llava_image_features_match_torch(attention, images):
    """The CLIP tower, layer -2's output held for the projector, the projector (LlavaModel.get_image_features)."""
    from transformers import LlavaConfig
    from transformers.models.llava.modeling_llava import LlavaModel

    data = _json("llava-1.5-7b-hf")
    vision = {**data["vision_config"], "hidden_size": SMALL["hidden"], "num_attention_heads": SMALL["heads"],
              "intermediate_size": SMALL["inter"], "num_hidden_layers": SMALL["layers"] + 1, "image_size": 112}
    text = {**data["text_config"], "hidden_size": 2 * SMALL["hidden"], "intermediate_size": SMALL["inter"],
            "num_hidden_layers": 1, "num_attention_heads": SMALL["heads"], "num_key_value_heads": SMALL["heads"],
            "vocab_size": 1000}
    scaled = {**data, "vision_config": vision, "text_config": text}
    config = LlavaConfig(**scaled)
    config._attn_implementation = attention
    config.vision_config._attn_implementation = attention
    torch.manual_seed(0)
    model = LlavaModel(config).to(torch.bfloat16).eval()
    pixels = torch.randn(images, 3, 112, 112, dtype=torch.bfloat16)

    class Features(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = model

        def forward(self, x):
            return self.inner.get_image_features(pixel_values=x)

    arch = parse_config(scaled, "llava-scaled")
    counted = tower_activations(arch, TowerInput(batch=1, prompt=images * 64, images=images), act_bytes=2, tp=1,
                                fused=attention == "sdpa")
    assert counted.peak_bytes == pytest.approx(measured_peak(Features(), pixels), rel=0.05)
