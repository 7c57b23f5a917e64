"""Encoder serving throughput against NVIDIA's published TensorRT BERT latencies (a check set, issue 16).
benchmarks/validate_encoder.py prints the rows."""

import statistics

from tests.validation.bench import args, error, rows

ROWS = rows("encoder_measurements.yaml")


def test_rows_are_sourced_checks_and_consistent():
    assert len(ROWS) >= 5
    for r in ROWS:
        a = args(r)
        assert r.role == "check" and r.source and r.get("retrieved") and a.engine == "tensorrt" and a.output == 0
        assert abs(r.value - a.batch * a.prompt / (r.get("latency_ms") / 1e3)) < 1


def test_encoder_throughput_median_error_within_15_percent():
    assert statistics.median(abs(error(r)) for r in ROWS) <= 0.15
