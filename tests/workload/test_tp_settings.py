"""Engine settings by GPU count follow the tensor-parallel size, not the replica's total GPUs: SGLang sizes its
captured decode graphs by tp (server_args.py, 0.5 series: 256 at tp < 4, 512 at tp >= 4 on a 60-160 GiB GPU), so
4 GPUs as 2 pipeline stages of tp 2 capture up to 256, and the largest-context search of an engine that does not
cap a run at the config's context (`caps_context` 0) goes past it."""
import pytest

from sizeup.engines.sglang import SGLang
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model
from sizeup.workload.inference import InferenceConfig, estimate_inference
from sizeup.workload.serving import Load, RequestMix, serving_load

CATALOG = load_catalog()
H100 = CATALOG.device("h100-sxm-80gb")
LLAMA8 = load_model("llama-3.1-8b")


@pytest.fixture
def graph_sizes(monkeypatch):
    """The graph sizes of the models SGLang.at_gpus hands out."""
    sizes, at_gpus = [], SGLang.at_gpus

    def spy(self, gpus):
        model = at_gpus(self, gpus)
        sizes.append(model.graph_max_batch)
        return model
    monkeypatch.setattr(SGLang, "at_gpus", spy)
    return sizes


def test_the_estimate_sizes_sglang_graphs_by_tp_not_by_gpus(graph_sizes):
    estimate_inference(LLAMA8, H100, InferenceConfig(engine="sglang@0.5.4", gpus=4, pp=2), limits=False)
    assert graph_sizes and set(graph_sizes) == {256}
    graph_sizes.clear()
    estimate_inference(LLAMA8, H100, InferenceConfig(engine="sglang@0.5.4", gpus=4), limits=False)
    assert set(graph_sizes) == {512}


def test_serving_sizes_sglang_graphs_by_tp_not_by_gpus(graph_sizes):
    serving_load(LLAMA8, H100, InferenceConfig(engine="sglang@0.5.4", gpus=4, pp=2),
                 RequestMix(input_tokens=1000, output_tokens=200), Load(concurrency=8))
    assert graph_sizes and set(graph_sizes) == {256}


def test_the_largest_context_goes_past_the_config_where_the_engine_does_not_cap_it():
    m1 = CATALOG.device("apple-m1-max")
    mistral = load_model("mistral-7b")
    e = estimate_inference(mistral, m1, InferenceConfig(engine="mlx", prompt=40_000, output=100))
    assert e.memory.fits and e.max_context > mistral.max_context  # mlx caps_context 0: 40,100 tokens priced
    assert any("(40,050 tokens)" in a for a in e.assumptions)
