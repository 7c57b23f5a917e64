"""vLLM's profiled start-up memory against published logs (vllm_text_measurements.yaml,
vllm_multimodal_measurements.yaml: check sets, nothing was tuned on them); benchmarks/validate_vllm_memory.py prints
the rows, each the `sizeup estimate ... --engine vllm` command of the logged `vllm serve`.

Targets: the weights within 1%; the KV memory left within 5% (text) and 10% (the vision-language row, whose batch
settings the log leaves unstated); the profiled peak within 10% and not above the log's (these V0 logs' sampler also
kept full probs and logprobs, which the V1 sampler model leaves out; the multimodal row's peak is the dummy sampler's
phase over 1,024 rows of Gemma 3's 262,208 logits with the encoder cache beside it).

History, as it happened: the first sampler term left the sort's workspace out and read -27% on both text rows and
-68% on the multimodal one; the workspace (PyTorch's reverse indices and cub's third key/value buffers, read from
their source, no free parameter) brought them to -3% and -4%. The text rows name the logs' release (`vllm@0.6`), whose
V0 profiling run samples over max_num_seqs rows too: peak -2.5%, KV +3.1%. Nothing was fitted to these rows."""

from tests.validation.bench import error, rows

ROWS = rows("vllm_*_measurements.yaml")


def test_rows_are_sourced_checks():
    assert len(ROWS) >= 7
    assert all(r.role == "check" and r.source and r.get("retrieved") and r.value > 0 for r in ROWS)


def test_weights_within_one_percent():
    assert all(abs(error(r)) <= 0.01 for r in ROWS if r.metric == "weights_bytes")


def test_kv_memory_left_within_target():
    for r in (r for r in ROWS if r.metric == "vllm_kv_cache_bytes"):
        assert abs(error(r)) <= (0.10 if "multimodal" in r.file else 0.05), r.id


def test_profiled_peak_within_ten_percent_and_a_lower_bound():
    for r in (r for r in ROWS if r.metric == "vllm_peak_activation_bytes"):
        assert -0.10 <= error(r) <= 0, r.id
