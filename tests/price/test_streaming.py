"""price/streaming.py: a matrix product's time beyond max(weight read, compute) near its ridge point."""

import pytest

from sizeup.price import streaming


def test_the_excess_follows_the_measured_curve():
    ratios, values, source = streaming._curve()
    assert "vidur" in source
    j = ratios.index(1.189)  # a measured point: C = 1.189 R takes R x (1.189 + its excess)
    assert streaming.excess(2.0, 2.0 * 1.189, "typical") == pytest.approx(2.0 * values["typical"][j])
    mid = (ratios[j] * ratios[j + 1]) ** 0.5  # half-way in log r between two points
    assert streaming.excess(1.0, mid, "typical") == pytest.approx((values["typical"][j] + values["typical"][j + 1]) / 2)


def test_far_from_the_ridge_the_excess_vanishes():
    assert streaming.excess(1.0, 1e-3, "typical") < 1e-3
    assert streaming.excess(1.0, 30.0, "high") == 0.0
    assert streaming.excess(0.0, 5.0, "typical") == 0.0
    assert streaming.excess(5.0, 0.0, "high") == 0.0


def test_the_slow_corner_pays_most():
    assert streaming.excess(1.0, 1.0, "low") < streaming.excess(1.0, 1.0, "typical") < streaming.excess(1.0, 1.0, "high")
    assert "price/streaming.py" in streaming.note()


def test_a_light_loads_prompts_pay_in_the_steps_that_run_them():
    # 10 decodes (r 0.1) carrying 100 prompt tokens a step on average in prompts of 1,000: a tenth of the steps runs
    # 1,010 tokens (r 10.1), the others 10
    plain, loaded = streaming.excess(1.0, 0.1, "typical"), streaming.excess(1.0, 10.1, "typical")
    assert streaming.step_excess(1.0, 0.01, 10, 100, 1000, "typical") == pytest.approx(0.9 * plain + 0.1 * loaded)
    assert streaming.step_excess(1.0, 0.01, 10, 0, 1000, "typical") == pytest.approx(plain)


def test_a_mixture_of_experts_reads_more_experts_the_more_tokens_a_step_routes():
    from sizeup.ingest.load import load_model

    dense = streaming.read_terms(load_model("llama-3.1-8b"))
    assert dense == (1.0, 0.0, 0.0) and streaming.read_growth(dense, 500) == 1.0
    mixtral = load_model("mixtral-8x7b")  # 8 experts, 2 a token
    terms = streaming.read_terms(mixtral)
    assert terms[2] == pytest.approx(2 / 8)
    assert streaming.read_growth(terms, 1) == 1.0
    # a step of many tokens reads every expert: all the parameters over those one token reads
    assert streaming.read_growth(terms, 200) == pytest.approx(mixtral.params / mixtral.active_params, rel=1e-6)
    # two tokens: 1 - (3/4)^2 = 7/16 of the experts, against 2/8 for one
    dense_part, experts, _ = terms
    assert streaming.read_growth(terms, 2) == pytest.approx(dense_part + experts * 7 / 16)


def test_the_read_is_the_weights_at_the_bandwidth_at_most_the_single_step():
    # a launch-bound or M = 1 kernel-bound single-sequence step is no weight read: R is the weights at the device's
    # bandwidth and its kind's typical memory efficiency, unless the step itself is shorter
    from sizeup.hardware.catalog import load_catalog
    from sizeup.ingest.load import load_model
    from sizeup.price.efficiency import device_efficiency

    h100, llama = load_catalog().device("h100"), load_model("llama-3.1-8b")
    read = 16e9 / (h100.memory_bandwidth_bytes_per_s * device_efficiency(h100).memory.typical)
    assert streaming.weight_read(h100, 16e9, llama, 1.0) == pytest.approx(read)
    assert streaming.weight_read(h100, 16e9, llama, read / 2) == read / 2
    mixtral = load_model("mixtral-8x7b")  # one token reads its active share of the weights
    assert streaming.weight_read(h100, 16e9, mixtral, 1.0) == pytest.approx(
        read * mixtral.active_params / mixtral.params)
