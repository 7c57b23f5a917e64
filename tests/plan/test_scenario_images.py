"""A serving scenario's images (traffic.images_per_request, traffic.image_size) reach the replica model:
each request's vision-tower pass is a fixed part of its prefill."""

import json
from pathlib import Path

import pytest

from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.families.registry import parse_config
from sizeup.plan.scenario import parse_scenario
from sizeup.plan.serving import replica_model
from sizeup.workload.inference import InferenceConfig

LLAVA = Path(__file__).parents[1] / "ingest" / "configs" / "llava-1.5-7b-hf.json"


def _scenario(**traffic):
    return parse_scenario({"name": "vlm", "model": "llama-3.1-8b", "task": "api",
                           "traffic": {"peak_requests_per_s": 1, "prompt_tokens": 800, **traffic}})


def test_images_and_their_size_are_read_from_the_traffic():
    t = _scenario(images_per_request=2, image_size=448).traffic
    assert (t.images, t.image_hw) == (2, (448, 448))
    assert (_scenario().traffic.images, _scenario().traffic.image_hw) == (0, None)


@pytest.mark.parametrize("traffic, message", [({"images_per_request": -1}, "images_per_request"),
                                              ({"image_size": "big"}, "image_size")])
def test_bad_image_keys_are_one_line(traffic, message):
    with pytest.raises(ConfigError) as e:
        _scenario(**traffic)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_request_with_an_image_has_a_larger_fixed_prefill():
    arch = parse_config(json.loads(LLAVA.read_text()), "llava")
    h100 = load_catalog().device("h100")
    text = replica_model(arch, h100, InferenceConfig(prompt=800, output=100), max_batch=4)
    image = replica_model(arch, h100, InferenceConfig(prompt=800, output=100, images=1), max_batch=4)
    assert image.prefill_fixed_s > text.prefill_fixed_s
    assert image.decode_step_s == text.decode_step_s
