"""vLLM's front end and its host time under load: `vllm serve` (the default) against the offline LLM class
(`--engine-opt offline`: LLM.generate, `vllm bench throughput`), and V0 before 0.6 processing every running request's
output between steps (data/engines/vllm.yaml host_per_request_s.offline, host_per_request_s by release, host_overlap; sources there)."""

import pytest

from sizeup.api import estimate
from sizeup.engines import resolve
from sizeup.engines.base import engine_settings
from sizeup.engines.profile import engine_profile
from sizeup.engines.vllm import vllm_batch_defaults
from sizeup.hardware.catalog import load_catalog

CATALOG = load_catalog(include_user=False)
H100 = CATALOG.device("h100-sxm-80gb")
OFFLINE = engine_settings("vllm", ("offline",))


def test_offline_is_an_engine_option_a_user_types():
    assert OFFLINE == {"offline_frontend": 1.0}


@pytest.mark.parametrize("device, expected", [("h100-sxm-80gb", (16384, 1024)), ("a100-sxm-80gb", (8192, 256)),
                                              ("rtx-4090", (8192, 256))])
def test_the_llm_class_takes_its_own_batch_defaults(device, expected):
    # vllm/engine/arg_utils.py get_batch_defaults: UsageContext.LLM_CLASS 16384 / 8192 batched tokens
    step, seqs, why = vllm_batch_defaults(engine_profile("vllm").with_settings(OFFLINE), CATALOG.device(device))
    assert (step, seqs) == expected and "offline LLM class" in why


def test_offline_has_no_api_server_and_its_own_host_time():
    served, offline = resolve("vllm", H100), resolve("vllm", H100, settings=OFFLINE)
    assert served.request_overhead() is not None and served.request_intake() is not None
    assert "--engine-opt offline" in served.request_overhead()[1]  # the served assumption is stated
    assert offline.request_overhead() is None and offline.request_intake() is None
    # V1 engine core's gap at batch 256: 5-6 ms (vllm issue 10634) -> 21.5 us a request, against 140 us served
    assert offline.host_floor(256).typical == pytest.approx(256 * 21.5e-6)
    assert served.host_floor(256).typical == pytest.approx(256 * 140e-6)
    assert offline.batching.max_batched_tokens == 16384
    assert any("--engine-opt offline" in n for n in offline.option_notes())


def test_an_offline_burst_of_an_8b_model_is_not_capped_by_the_servers_host_time():
    kwargs = dict(device="h100-sxm-80gb", engine="vllm", quant="bf16", dataset="sharegpt", num_prompts=1000,
                  offline=True)
    served = estimate("llama-3.1-8b", **kwargs)
    offline = estimate("llama-3.1-8b", engine_options=("offline",), **kwargs)
    out = lambda e: e.under_load.output_tokens_per_s.typical  # noqa: E731
    # served: 1 / 140 us caps an iteration's requests at ~7.1k tokens/s; offline the GPU step binds
    assert out(served) < 1 / 140e-6
    assert out(offline) > 1.4 * out(served)


def test_v0_before_0_6_adds_host_time_per_running_request_to_every_step():
    v054, v060, v010 = (resolve(f"vllm@{v}", H100) for v in ("0.5.4", "0.6.0", "0.10"))
    # vllm issue 6801: ~20 ms between steps at batch 200, less the batch-independent 3.4 ms -> 83 us a request
    assert v054.host_floor(200).typical == pytest.approx(200 * 83e-6) and not v054.host_overlapped
    assert v060.host_floor(200) is None  # asynchronous output processing: nothing per request between steps
    assert v010.host_floor(200) is not None and v010.host_overlapped  # V1: a floor under the step


def test_v0_per_request_host_time_slows_a_burst_of_0_5_against_0_6():
    kwargs = dict(device="h100-sxm-80gb", quant="bf16", dataset="sharegpt", num_prompts=1280, offline=True,
                  engine_options=("max-model-len=2048",))
    old = estimate("llama-3-8b", engine="vllm@0.5.4", **kwargs).under_load
    new = estimate("llama-3-8b", engine="vllm@0.6.0", **kwargs).under_load
    assert old.output_tokens_per_s.typical < 0.8 * new.output_tokens_per_s.typical
    assert any("added to each step" in a for a in old.assumptions)
