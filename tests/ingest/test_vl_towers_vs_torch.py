"""The analytic vision towers of Gemma 3 and Mistral 3 (ingest/tower_ops.py) against a trace of transformers'
own modules for the same real configs on fake tensors (ingest/torch_trace.py): SigLIP over one 896 × 896 image
and Gemma 3's projector over its 4,096 patches; Pixtral over one 448 × 336 image (an image of its own
resolution, not square) and Mistral 3's projector over its 768 patches. Matrix-product FLOPs must be equal
exactly; all FLOPs within 0.1% (elementwise conventions differ: GELU, the norms, the average pool)."""

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


def _split(ledger) -> tuple[list, list]:
    """The tower's ops and the projector's (transformers builds them as separate modules)."""
    return ([o for o in ledger.ops if "projector" not in o.scope], [o for o in ledger.ops if "projector" in o.scope])


def test_gemma3_siglip_tower_and_projector_equal_the_traced_modules():
    data = json.loads((CONFIGS / "gemma-3-12b-it.json").read_text())

    def tower():
        from transformers import SiglipVisionConfig
        from transformers.models.siglip.modeling_siglip import SiglipVisionModel

        config = SiglipVisionConfig(**data["vision_config"])
        config._attn_implementation = "sdpa"
        return SiglipVisionModel(config)

    def projector():
        from transformers import Gemma3Config
        from transformers.models.gemma3.modeling_gemma3 import Gemma3MultiModalProjector

        return Gemma3MultiModalProjector(Gemma3Config(**data))

    ledger = tower_ledger(parse_config(data, "gemma-3-12b-it"), TowerInput(batch=1, prompt=300, images=1))
    vision, head = _split(ledger)
    assert_same_work(vision, trace_module(tower, [InputSpec(shape=(1, 3, 896, 896))]).ops)
    assert_same_work(head, trace_module(projector, [InputSpec(shape=(1, 4096, 1152))]).ops)


def test_mistral3_pixtral_tower_and_projector_equal_the_traced_modules():
    data = json.loads((CONFIGS / "mistral-small-3.1-24b-instruct-2503.json").read_text())
    hw = (448, 336)

    def tower():
        import torch
        from transformers import PixtralVisionConfig
        from transformers.models.pixtral.modeling_pixtral import PixtralVisionModel

        config = PixtralVisionConfig(**data["vision_config"])
        config._attn_implementation = "sdpa"

        class OneImage(torch.nn.Module):  # the image's size as the processor passes it (a fake tensor has no values)
            def __init__(self):
                super().__init__()
                self.model = PixtralVisionModel(config)

            def forward(self, pixels):
                return self.model(pixels, image_sizes=[hw]).last_hidden_state

        return OneImage()

    def projector():
        import torch
        from transformers import Mistral3Config
        from transformers.models.mistral3.modeling_mistral3 import Mistral3MultiModalProjector

        class OneImage(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.projector = Mistral3MultiModalProjector(Mistral3Config(**data))

            def forward(self, features):
                return self.projector(features, image_sizes=[hw])

        return OneImage()

    arch = parse_config(data, "mistral-small-3.1")
    vision, head = _split(tower_ledger(arch, TowerInput(batch=1, prompt=1000, images=1, image_hw=hw)))
    patches = (hw[0] // 14) * (hw[1] // 14)
    assert_same_work(vision, trace_module(tower, [InputSpec(shape=(1, 3, *hw))]).ops)
    assert_same_work(head, trace_module(projector, [InputSpec(shape=(patches, 1024))]).ops)
