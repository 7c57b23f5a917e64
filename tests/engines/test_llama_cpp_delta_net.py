"""llama.cpp's Gated DeltaNet decode graph by build (engines/llama_cpp.py extra_launches, data/engines/llama.cpp.yaml
gdn_decode_nodes): the build that first ran Qwen3-Next (PR 16095, b7189 of 2025-11-28) builds each DeltaNet mixer's
one-token decode from 53 ggml compute nodes, counted by hand from its src/models/qwen3next.cpp (the list is in the data
file's source); the ledger prices 7 ops a mixer, so the other 46 of each of the 36 mixers cost the per-op launch time.
Builds from the fused GATED_DELTA_NET op (PR 19504) carry no count and are priced at the ledger's ops."""

import pytest

from sizeup.engines import resolve
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.load import load_model
from sizeup.ingest.transformer_ops import Step, transformer_ledger
from sizeup.price.efficiency import table_efficiency

B7189, FUSED = "2025-11-28", "2026-02-11"
# build_layer_attn_linear + build_delta_net_autoregressive at one token, by group (data file's source)
NODES = {"in-projections": 2, "alpha gate": 4, "q/k/v flatten": 3, "conv state and concat": 5, "conv": 4,
         "q/k/v/beta conts": 4, "ssm state": 1, "head repeat": 2, "delta rule": 18, "state and output copies": 4,
         "gated norm": 4, "out projection": 2}


@pytest.fixture(scope="module")
def setup():
    catalog = load_catalog()
    arch = load_model("Qwen/Qwen3-Next-80B-A3B-Instruct")
    return catalog.device("ryzen-ai-max-395"), transformer_ledger(arch, Step(batch=1, new_tokens=1, context=128))


def _model(device, build):
    return resolve("llama.cpp", device, build_date=build, backend="vulkan")


def test_the_node_count_of_b7189_is_the_cited_figure(setup):
    device, _ = setup
    assert _model(device, B7189).profile.value("gdn_decode_nodes", -1) == sum(NODES.values()) == 53


def test_each_of_the_36_mixers_launches_46_kernels_beyond_the_ledger_at_the_device_launch_cost(setup):
    device, ledger = setup
    mixer_ops = [o for o in ledger.ops if o.scope and o.scope.startswith("model.layers.0.mixer.")]
    assert len(mixer_ops) == 7
    per_op = table_efficiency(device).overhead_s  # what each of the ledger's ops pays on this device (no CUDA graph)
    time, note = _model(device, B7189).extra_launches(ledger, fp32=False, per_op=per_op)
    assert time.typical == pytest.approx(36 * (53 - 7) * per_op.typical)
    assert "53 ggml compute nodes" in note and "1,656 more kernels" in note


def test_builds_of_the_fused_op_and_models_without_delta_net_add_nothing(setup):
    device, ledger = setup
    per_op = table_efficiency(device).overhead_s
    assert _model(device, FUSED).extra_launches(ledger, fp32=False, per_op=per_op) is None
    assert _model(device, None).extra_launches(ledger, fp32=False, per_op=per_op) is None
    dense = transformer_ledger(load_model("llama-3-8b"), Step(batch=1, new_tokens=1, context=128))
    assert _model(device, B7189).extra_launches(dense, fp32=False, per_op=per_op) is None
