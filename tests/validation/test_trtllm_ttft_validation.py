"""TensorRT-LLM time to first token at batch 1 (tests/validation/inference_measurements_trtllm_ttft.yaml, a check
set of issue 18): the prefill GEMMs of a serving engine on H100/H200/L40S (FP8) and A100 (FP16), priced with the
device defaults (data/efficiency/gpu.yaml), which no row was used to set."""

import statistics


from tests.validation.bench import load_benchmark, load_rows

ROWS = load_rows("inference_measurements_trtllm_ttft.yaml")


def _bench():
    return load_benchmark("validate_inference")


def test_rows_are_sourced_checks_and_consistent():
    assert len(ROWS) == 24
    for r in ROWS:
        assert r["role"] == "check" and r["source"] and r["retrieved"] and r["batch"] == 1
        assert abs(r["value"] - r["prompt_tokens"] / (r["ttft_ms"] / 1e3)) < 1


def test_long_prompt_ttft_within_10_percent_median():
    """At 2048 tokens the prefill is GEMM-bound: the gpu.yaml matmul fractions (0.72 of fp16, 0.57 of fp8) land
    within 2% on Llama-2-7b / Mistral-7B at FP8 on H100/H200 and FP16 on A100 (measured: 48-50% and 71-72% of peak)."""
    from sizeup.hardware.catalog import load_catalog

    bench, catalog = _bench(), load_catalog(include_user=False)
    errors = [abs(bench.predict(r, catalog) / r["value"] - 1) for r in ROWS if r["prompt_tokens"] == 2048]
    assert statistics.median(errors) <= 0.10
    assert max(errors) <= 0.25
