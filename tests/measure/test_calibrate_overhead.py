"""The per-op overhead as its own term: measured as the no-work intercept, predicted as kernels x host time."""

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.ledger import Ledger, OpKind, OpRecord
from sizeup.measure.calibrate import fixed_cost_intercept, overhead_term
from sizeup.price.efficiency import Efficiency
from sizeup.price.roofline import price
from sizeup.ranges import Range

CATALOG = load_catalog(include_user=False)


def test_the_intercept_of_linear_latencies_is_their_fixed_cost():
    # 3 ms of fixed cost plus 1.5 ms per image
    assert fixed_cost_intercept([(1, 4.5e-3), (2, 6e-3), (4, 9e-3), (8, 15e-3)]) == pytest.approx(3e-3)


def test_large_batches_and_single_points_do_not_feed_the_intercept():
    assert fixed_cost_intercept([(1, 4.5e-3), (2, 6e-3), (64, 1.0)]) == pytest.approx(3e-3)
    assert fixed_cost_intercept([(1, 4.5e-3), (1, 4.6e-3)]) is None


def test_on_a_cpu_the_overhead_term_is_kernels_times_host_time():
    cpu = next(d for d in CATALOG.devices.values() if d.kind == "cpu")
    ops = [OpRecord(op="aten.relu", kind=OpKind.ELEMENTWISE, scope="m", flops=10, matmul_flops=0,
                    bytes_read=40, bytes_written=40, dtype="fp32", count=3)]
    eff = Efficiency(tensor={k: Range(1, 1, 1) for k in ("matmul", "conv", "attention")}, vector=Range(1, 1, 1),
                     memory=Range(1, 1, 1), overhead_s=Range(2e-5, 2e-5, 2e-5))
    term = overhead_term(price(Ledger(ops=ops), cpu, eff))
    assert term["kernels"] == 3
    assert term["predicted_s"] == pytest.approx(6e-5)
