"""Encoder serving throughput against NVIDIA's published TensorRT BERT latencies (a check set, issue 16).
benchmarks/validate_encoder.py prints the rows."""

import statistics


from tests.validation.bench import load_benchmark, load_rows

ROWS = load_rows("encoder_measurements.yaml")


def _bench():
    return load_benchmark("validate_encoder")


def test_rows_are_sourced_checks_and_consistent():
    assert len(ROWS) >= 5
    for r in ROWS:
        assert r["role"] == "check" and r["source"] and r["retrieved"]
        assert abs(r["value"] - r["batch"] * r["seq"] / (r["latency_ms"] / 1e3)) < 1


def test_encoder_throughput_median_error_within_15_percent():
    from sizeup.hardware.catalog import load_catalog

    bench, catalog = _bench(), load_catalog(include_user=False)
    errors = [abs(bench.predict(r, catalog) / r["value"] - 1) for r in ROWS]
    assert statistics.median(errors) <= 0.15
