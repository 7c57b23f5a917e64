"""--split layers: consecutive layers per GPU, one GPU active at a time (accelerate device_map="auto")."""

import pytest

from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model
from sizeup.workload.inference import InferenceConfig, estimate_inference


def _estimate(gpus: int, split: str):
    cfg = InferenceConfig(batch=1, prompt=16, output=64, weights="bf16", engine="hf", gpus=gpus, split=split)
    return estimate_inference(load_model("llama-2-13b"), load_catalog().device("a100-sxm-80gb"), cfg, limits=False)


def test_layer_split_runs_at_one_gpus_speed_with_the_memory_shared():
    one, layers, tensor = _estimate(1, "tensor"), _estimate(4, "layers"), _estimate(4, "tensor")
    assert layers.decode.latency_s.typical == pytest.approx(one.decode.latency_s.typical)
    assert tensor.decode.latency_s.typical < one.decode.latency_s.typical
    assert layers.memory.weights_bytes < one.memory.weights_bytes / 3
    assert any("--split layers" in a for a in layers.assumptions)
    assert layers.to_dict()["config"]["split"] == "layers"


def test_unknown_split_is_one_line():
    with pytest.raises(ConfigError, match="--split 'pipeline': expected one of tensor, layers"):
        InferenceConfig(split="pipeline")
