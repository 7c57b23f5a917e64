"""The planner's memory and batch checks see the model as the engine runs it (ExecutionModel.as_run), as `estimate`
does: vLLM before 0.7.1 caches DeepSeek-V3's MLA per head (engines/as_run.py), about ten times the latent cache."""
import pytest

from sizeup.api import estimate, plan


def _plan(**changes):
    return plan("deepseek-v3", task="api", rps=0.05, prompt=100_000, output=200, engine="vllm@0.6",
                devices=("h200-sxm-141gb",), ttft_p95=600.0, tpot_p95=5.0, **changes)


def test_the_plan_refuses_what_the_estimate_says_does_not_fit():
    four = estimate("deepseek-v3", device="h200-sxm-141gb", gpus=4, engine="vllm@0.6", quant="awq-int4",
                    prompt=100_000, output=200)
    assert not four.memory.fits
    result = _plan().result
    assert result.chosen.gpus == 8
    reasons = {r.family: r.reason for r in result.rejected}
    assert reasons["4x h200-sxm-141gb awq-int4 vllm@0.6"].startswith("does not fit: the engine's KV-cache pool")
    eight = estimate("deepseek-v3", device="h200-sxm-141gb", gpus=8, engine="vllm@0.6", quant="awq-int4",
                     prompt=100_000, output=200)
    assert eight.memory.fits


def test_a_family_whose_largest_batch_is_zero_is_rejected(monkeypatch):
    """transformers reports no concurrent-sequence limit, so the planner searches the largest batch; where not one
    mean request fits (stubbed here: 0), the family is rejected, not planned at batch 1."""
    from sizeup.plan import serving
    monkeypatch.setattr(serving, "_max_batch", lambda *a: 0)
    result = plan("llama-3.1-8b", task="api", rps=0.05, prompt=1000, output=200, engine="transformers",
                  devices=("h100-sxm-80gb",), ttft_p95=600.0, tpot_p95=5.0).result
    assert result.chosen is None
    reasons = [r.reason for r in result.rejected if "1x h100-sxm-80gb" in r.family]
    assert reasons and all(r.startswith("does not fit: not one request of 1,200 tokens") for r in reasons)


def test_the_largest_batch_is_zero_where_no_request_fits():
    from sizeup.hardware.catalog import load_catalog
    from sizeup.ingest.hf_config import load_model
    from sizeup.plan.serving import _max_batch
    from sizeup.workload.inference import InferenceConfig, execution_for

    h200 = load_catalog().device("h200-sxm-141gb")
    cfg = InferenceConfig(prompt=100_000, output=200, weights="awq-int4", engine="vllm@0.6", gpus=4)
    assert _max_batch(load_model("deepseek-v3"), h200, cfg, execution_for(h200, cfg)) == 0
