"""llama.cpp's CUDA graphs by build (engines/llama_cpp.py graph_replays, data/engines/llama.cpp.yaml): a decode step
replays a captured graph from PR 6766 (2024-05-08) on NVIDIA GPUs of compute capability 8.0 and up (7.0 from PR 25749),
one sequence at a time until PR 19645 (2026-02-15), MoE models from then up to 4 sequences; it then costs `graph_op_s`
per kernel instead of the device's eager launch time. Prefill, other backends and vendors, and Ollama are unchanged."""

import pytest

from sizeup import api
from sizeup.engines import resolve
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.load import load_model

BEFORE, AFTER, NOW = "2024-05-07", "2024-05-08", None


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def _model(catalog, device="rtx-3090", build=AFTER, engine="llama.cpp", **kw):
    return resolve(engine, catalog.device(device), build_date=build, **kw)


def test_graphs_start_with_pr_6766(catalog):
    assert not _model(catalog, build=BEFORE).graph_replays(1)
    assert _model(catalog, build=AFTER).graph_replays(1)
    assert _model(catalog, build=NOW).graph_replays(1)


def test_the_architecture_gate_moves_from_ampere_to_volta(catalog):
    assert not _model(catalog, "rtx-2080", build="2026-07-15").graph_replays(1)
    assert _model(catalog, "rtx-2080", build="2026-07-16").graph_replays(1)
    assert not _model(catalog, "gtx-1080-ti", build=NOW).graph_replays(1)  # Pascal: never


def test_only_the_cuda_backend_of_nvidia_gpus_replays(catalog):
    assert not _model(catalog, backend="vulkan", build=NOW).graph_replays(1)
    assert not _model(catalog, "rx-7900-xtx", build=NOW).graph_replays(1)


def test_more_than_one_sequence_replays_only_from_pr_19645(catalog):
    assert not _model(catalog, build="2026-02-14").graph_replays(2)
    assert _model(catalog, build="2026-02-15").graph_replays(64)


def test_moe_models_replay_from_pr_19645_up_to_four_sequences(catalog):
    arch = load_model("qwen3-30b-a3b")
    old, _, _ = _model(catalog, build="2026-02-14").as_run(arch, 1)
    new, _, _ = _model(catalog, build=NOW).as_run(arch, 1)
    assert not old.graph_replays(1)
    assert new.graph_replays(4) and not new.graph_replays(5)
    offloaded, _, _ = _model(catalog, build=NOW, settings={"n_cpu_moe": 8.0}).as_run(arch, 1)
    assert not offloaded.graph_replays(1)


def test_a_replayed_decode_costs_graph_op_s_per_kernel_and_prefill_is_unchanged(catalog):
    model = _model(catalog)
    assert model.per_op_overhead(True, 1) == model.profile.range("graph_op_s")
    assert model.per_op_overhead(False, 512) is None
    assert _model(catalog, build=BEFORE).per_op_overhead(True, 1) is None  # the device's eager launch time
    assert _model(catalog, engine="ollama", build=None).per_op_overhead(True, 1) is None


def _rate(build, prompt=16, output=128):
    return api.estimate("llama-2-7b", device="rtx-3090", engine="llama.cpp", quant="q4_0", batch=1, prompt=prompt,
                        output=output, build_date=build)


def test_the_figure_reproduces_the_speedup_pr_6766_measured():
    """RTX 3090, LLaMA 2 7B Q4_0: 116.31 -> 128.27 t/s (x1.103) with graphs; the median of the three GPUs the figure is
    derived from gives it within 3%. The prompt is untouched."""
    before, after = _rate(BEFORE), _rate(AFTER)
    assert after.decode.tokens_per_s.typical / before.decode.tokens_per_s.typical == pytest.approx(1.103, rel=0.03)
    assert after.prefill.tokens_per_s.typical == pytest.approx(before.prefill.tokens_per_s.typical, rel=1e-9)
