"""Published transformers eager generate() decode rates of Llama-class models as a regression guard
(tests/validation/inference_measurements_hf_eager.yaml; benchmarks/validate_ssm.py --hf-eager prints them).

CHECK rows only (nothing was fit on them). Eager decode is paced by the host's Python dispatch, whose speed on the
reporter's machine is unknown: each row is held inside sizeup's low-high range and its typical within a factor 2."""

from tests.validation.bench import args, predict, rows

ROWS = rows("inference_measurements_hf_eager.yaml")


def test_the_rows_are_sourced_hf_check_rows_on_a_named_device():
    assert ROWS
    assert all(r.role == "check" and args(r).engine == "hf" and r.source and r.get("retrieved") and args(r).device
               and r.value > 0 for r in ROWS)


def test_eager_decode_lies_in_the_predicted_range():
    for row in ROWS:
        p = predict(row)
        assert p.low <= row.value <= p.high, (row.id, p, row.value)
        assert 0.5 <= p.typical / row.value <= 2.0, (row.id, p.typical, row.value)
