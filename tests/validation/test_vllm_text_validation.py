"""vLLM's profiled start-up memory of text models against published logs (a check set; nothing was tuned on it).
benchmarks/validate_vllm_text.py prints the rows with their errors.

Targets: the KV memory left within 5% where the log gives it; the profiled peak within 10% and not above the
log's (these V0 logs' sampler also kept full probs and logprobs, which the V1 sampler model leaves out).

History, as it happened: the first sampler term left the sort's workspace out and read -27% on both rows; the
workspace (PyTorch's reverse indices and cub's third key/value buffers, read from their source, no free parameter)
brought them to -3%. Nothing was fitted to these rows."""

from tests.validation.bench import load_benchmark, load_rows

ROWS = load_rows("vllm_text_measurements.yaml")


def test_rows_are_sourced_checks():
    assert ROWS
    for r in ROWS:
        assert r["role"] == "check" and r["source"] and r["retrieved"] and r["peak_activation_gib"] > 0


def test_kv_within_five_percent_and_peak_a_lower_bound_within_ten_percent():
    from sizeup.hardware.catalog import load_catalog

    bench, catalog = load_benchmark("validate_vllm_text"), load_catalog(include_user=False)
    for r in ROWS:
        p = bench.predict(r, catalog)
        assert abs(p["weights"] / r["weights_gib"] - 1) <= 0.01, r["id"]
        if r.get("kv_cache_gib"):
            assert abs(p["kv"] / r["kv_cache_gib"] - 1) <= 0.05, r["id"]
        assert 0.90 * r["peak_activation_gib"] <= p["peak"] <= r["peak_activation_gib"], r["id"]
