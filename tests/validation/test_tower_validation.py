"""The vision tower's priced pass against a published measurement of it (a check set, issue 16; nothing was
tuned on it). benchmarks/validate_towers.py prints the rows."""

from tests.validation.bench import load_benchmark, load_rows

ROWS = load_rows("tower_measurements.yaml")


def _bench():
    return load_benchmark("validate_towers")


def test_rows_are_sourced_checks():
    assert ROWS
    for r in ROWS:
        assert r["role"] == "check" and r["source"] and r["retrieved"] and r["latency_ms"] > 0


def test_each_measurement_lies_in_the_predicted_range_and_within_25_percent_of_typical():
    from sizeup.hardware.catalog import load_catalog

    bench, catalog = _bench(), load_catalog(include_user=False)
    for r in ROWS:
        predicted = bench.predict(r, catalog)
        measured = r["latency_ms"] / 1e3
        assert predicted.low <= measured <= predicted.high, r["id"]
        assert abs(predicted.typical / measured - 1) <= 0.25, r["id"]
