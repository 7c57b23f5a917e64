"""`sizeup estimate` of a model with a tower (an encoder-decoder's encoder, a vision-language model's vision
tower): its time is its own term of prefill in the text and in --json, and bad image flags are one line."""

import json
from pathlib import Path

import pytest

from sizeup.cli.main import main

CONFIGS = Path(__file__).parents[1] / "ingest" / "configs"


def test_estimate_text_shows_the_encoder_inside_ttft(capsys):
    assert main(["estimate", str(CONFIGS / "whisper-small.json"), "--device", "h100", "--prompt", "4",
                 "--output", "100"]) == 0
    out = capsys.readouterr().out
    assert "of which encoder:" in out and "1,500 positions" in out and "decoder prefill:" in out
    assert "prefill (TTFT) includes the encoder" in out


def test_estimate_json_carries_the_vision_tower(capsys):
    assert main(["estimate", str(CONFIGS / "qwen2-vl-7b-instruct.json"), "--device", "h100", "--prompt", "600",
                 "--images", "2", "--image-size", "448x448", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["tower"]["inputs"] == 2 and data["tower"]["positions_per_input"] == 1024
    assert data["prefill"]["includes"] == ["decoder", "vision_tower"]
    assert data["config"]["image_size"] == [448, 448]


@pytest.mark.parametrize("argv, message", [
    (["--image-size", "448y448"], "--image-size '448y448': expected HEIGHTxWIDTH"),
    (["--image-size", "0x448"], "--image-size '0x448': expected HEIGHTxWIDTH"),
    (["--images", "-1"], "--images -1"),
])
def test_bad_image_flags_are_one_line(capsys, argv, message):
    assert main(["estimate", str(CONFIGS / "qwen2-vl-7b-instruct.json"), "--device", "h100", *argv]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_images_without_a_device_are_refused_not_ignored(capsys):
    assert main(["estimate", str(CONFIGS / "llava-1.5-7b-hf.json"), "--images", "1"]) == 1
    err = capsys.readouterr().err
    assert "--images / --image-size: only with --device NAME" in err and err.count("\n") == 1
