import pytest

from sizeup.ledger import Ledger, OpKind, OpRecord, Phase, TensorCategory, TensorRecord, TensorSpec, enclosing_scopes


def op(scope, flops, read=10, written=5, phase=Phase.FORWARD, counted=True, name="aten.mm"):
    return OpRecord(op=name, kind=OpKind.MATMUL, scope=scope, phase=phase, flops=flops, bytes_read=read,
                    bytes_written=written, flops_counted=counted)


def test_enclosing_scopes_walks_to_root():
    assert list(enclosing_scopes("m.0.cv1")) == ["m.0.cv1", "m.0", "m", ""]
    assert list(enclosing_scopes("")) == [""]


def test_each_cost_is_added_to_every_enclosing_scope():
    ledger = Ledger(ops=[op("m.0.cv1.conv", 100), op("m.0.cv2.conv", 50), op("cv2", 7)],
                    params_by_scope={"m.0.cv1.conv": 3, "cv2": 4})
    scopes = ledger.by_scope()
    assert scopes[""].flops == 157
    assert scopes["m"].flops == scopes["m.0"].flops == 150
    assert scopes["m.0.cv1"].flops == 100
    assert scopes["m.0"].params == 3 and scopes[""].params == 7
    assert list(scopes)[:3] == ["", "m", "m.0"]  # order of execution, parents first
    assert set(ledger.by_scope(depth=1)) == {"", "m", "cv2"}


def test_totals_intensity_and_uncounted_ops():
    ledger = Ledger(ops=[op("a", 100, 30, 20), op("b", 0, 8, 2, counted=False, name="mylib.custom")])
    t = ledger.totals()
    assert (t.flops, t.bytes_read, t.bytes_written) == (100, 38, 22)
    assert t.arithmetic_intensity == pytest.approx(100 / 60)
    assert ledger.uncounted_ops() == {"mylib.custom": 1}
    assert t.uncounted_ops == 1


def test_count_multiplies_costs():
    ledger = Ledger(ops=[OpRecord(op="aten.mm", kind=OpKind.MATMUL, scope="layer", flops=10, bytes_read=4,
                                  bytes_written=2, count=32)])
    assert ledger.totals().flops == 320 and ledger.totals().bytes_moved == 192
    assert ledger.scaled(2).totals().flops == 640


def test_memory_peak_sums_live_tensors_by_category():
    ledger = Ledger(ops=[op("", 1) for _ in range(4)])
    ledger.tensors = [
        TensorRecord(name="w", category=TensorCategory.PARAMETER, nbytes=100, first_use=0, last_use=3),
        TensorRecord(name="a", category=TensorCategory.ACTIVATION, nbytes=40, first_use=0, last_use=1),
        TensorRecord(name="b", category=TensorCategory.ACTIVATION, nbytes=30, first_use=1, last_use=2),
        TensorRecord(name="g", category=TensorCategory.GRADIENT, nbytes=5, first_use=3, last_use=3),
    ]
    peak = ledger.memory_peak()
    assert peak.peak_bytes == 170 and peak.at_op == 1
    assert peak.by_category == {"parameter": 100, "activation": 70}
    assert sum(peak.by_category.values()) == peak.peak_bytes


def test_tensor_spec_bytes_and_validation():
    assert TensorSpec(shape=(2, 3), dtype="bfloat16").nbytes == 12
    assert TensorSpec(shape=(3,), dtype="int4").nbytes == 2  # packed, rounded up
    with pytest.raises(ValueError):
        TensorSpec(shape=(-1, 2))
    with pytest.raises(ValueError):
        OpRecord(op="x", kind=OpKind.OTHER, scope="", flops=1, matmul_flops=2)
