"""`sizeup estimate --pp N` (workload/pipeline.py): each GPU holds its stage's share of the weights and KV cache; a
token pays every stage in turn plus the sends between stages, so batch 1 gains nothing; under load the running
sequences form N micro-batches that keep every stage busy."""

import pytest

from sizeup import api
from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.price.comm import device_link
from sizeup.workload.pipeline import STAGE_TENSORS, hop_time, micro_batch

CATALOG = load_catalog(include_user=False)
BASE = dict(device="rtx-pro-6000-server", engine="tensorrt-llm", quant="nvfp4", kv_dtype="fp8", prompt=1000,
            output=1000)


def _estimate(**kw):
    return api.estimate("llama-3.1-70b", api.EstimateOptions(**{**BASE, **kw}))


def test_each_stage_holds_half_the_layers_weights():
    one, two = _estimate(), _estimate(gpus=2, pp=2)
    assert two.memory.weights_bytes == pytest.approx(one.memory.weights_bytes / 2, rel=0.03)
    assert two.to_dict()["config"]["pipeline_parallel"] == 2 and two.to_dict()["config"]["tensor_parallel"] == 1


def test_batch_one_pays_every_stage_and_the_hop():
    one, two = _estimate(), _estimate(gpus=2, pp=2)
    hops, _ = hop_time(CATALOG.device("rtx-pro-6000-server"), 2, 1, 8192, 2)
    assert two.decode.latency_s.typical == pytest.approx(one.decode.latency_s.typical + hops.typical, rel=1e-6)
    assert hops.typical > 0


def test_under_load_micro_batches_fill_the_stages():
    one, two = _estimate(batch=64), _estimate(batch=64, gpus=2, pp=2)
    half = _estimate(batch=32)
    hops, _ = hop_time(CATALOG.device("rtx-pro-6000-server"), 2, 32, 8192, 2)
    # a step of 64 sequences is the whole model at a micro-batch of 32, plus one send
    assert two.decode.latency_s.typical == pytest.approx(half.decode.latency_s.typical + hops.typical, rel=1e-6)
    # more than one GPU's throughput (both stages busy), less than twice: each micro-batch reads its stage's
    # weights again (unlike tensor parallelism, which reads each weight once per step)
    assert 1.05 < two.decode.tokens_per_s.typical / one.decode.tokens_per_s.typical < 2.0


def test_the_hop_is_the_hidden_states_over_the_link():
    device = CATALOG.device("rtx-pro-6000-server")
    link = device_link(device)
    t, note = hop_time(device, 3, 10, 8192, 2)
    size = 10 * 8192 * 2 * STAGE_TENSORS
    assert note is None
    assert t.typical == pytest.approx(2 * (size / (link.bytes_per_s * link.efficiency.typical)
                                           + link.latency_s.typical))
    assert micro_batch(5, 2) == 3 and micro_batch(1, 4) == 1


@pytest.mark.parametrize("kw, message", [
    (dict(gpus=3, pp=2), "--gpus 3 is not a multiple of the 2 pipeline stages"),
    (dict(gpus=2, pp=2, split="layers"), "with a layer split"),
    (dict(gpus=128, pp=128), "more pipeline stages than the model's 80 layers"),
])
def test_a_pipeline_it_cannot_place_is_a_one_line_error(kw, message):
    with pytest.raises(ConfigError, match=message):
        _estimate(**kw)


def test_the_cli_refuses_pp_for_a_device_table(capsys):
    from sizeup.cli.main import main

    assert main(["estimate", "llama-3.1-8b", "--devices", "datacenter", "--pp", "2"]) == 1
    assert "--pp 2: pipeline stages need one --device" in capsys.readouterr().err
