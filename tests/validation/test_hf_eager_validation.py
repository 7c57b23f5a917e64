"""Published transformers eager generate() decode rates of Llama-class models as a regression guard
(tests/validation/inference_measurements_hf_eager.yaml; benchmarks/validate_ssm.py --hf-eager prints them).

CHECK rows only (nothing was fit on them). Eager decode is paced by the host's Python dispatch, whose speed on the
reporter's machine is unknown: each row is held inside sizeup's low-high range and its typical within a factor 2."""

from tests.validation.bench import load_benchmark, load_rows

ROWS = load_rows("inference_measurements_hf_eager.yaml")


def test_the_rows_are_sourced_hf_check_rows_on_a_named_device():
    assert ROWS and len({r["id"] for r in ROWS}) == len(ROWS)
    assert all(r["role"] == "check" and r["engine"] == "hf" and r["source"] and r["retrieved"] and r["device"]
               and r["value"] > 0 for r in ROWS)


def test_eager_decode_lies_in_the_predicted_range():
    from sizeup.hardware.catalog import load_catalog

    bench = load_benchmark("validate_ssm")
    catalog = load_catalog(include_user=False)
    for row in ROWS:
        typical, low, high = bench.predict(row, catalog)
        assert low <= row["value"] <= high, (row["id"], low, high, row["value"])
        assert 0.5 <= typical / row["value"] <= 2.0, (row["id"], typical, row["value"])
