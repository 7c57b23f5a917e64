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


# ---- serialization: to_dict / from_dict is exact ------------------------------------------------

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_sizes = st.integers(min_value=0, max_value=2**62)
_names = st.text(max_size=12)


@st.composite
def _op_records(draw):
    flops = draw(_sizes)
    return OpRecord(op=draw(_names), kind=draw(st.sampled_from(OpKind)), scope=draw(_names),
                    phase=draw(st.sampled_from(Phase)), flops=flops,
                    matmul_flops=draw(st.integers(min_value=0, max_value=flops)), bytes_read=draw(_sizes),
                    bytes_written=draw(_sizes), dtype=draw(st.sampled_from(["fp32", "bf16", "fp16", "int8"])),
                    count=draw(st.integers(min_value=1, max_value=1000)), flops_counted=draw(st.booleans()),
                    notes=tuple(draw(st.lists(_names, max_size=3))))


@st.composite
def _tensor_records(draw):
    first = draw(st.integers(min_value=0, max_value=500))
    return TensorRecord(name=draw(_names), category=draw(st.sampled_from(TensorCategory)), nbytes=draw(_sizes),
                        first_use=first, last_use=first + draw(st.integers(min_value=0, max_value=500)),
                        scope=draw(_names))


@given(name=_names, ops=st.lists(_op_records(), max_size=8), tensors=st.lists(_tensor_records(), max_size=8),
       params=st.dictionaries(_names, _sizes, max_size=4), assumptions=st.lists(_names, max_size=3))
def test_a_ledger_survives_to_dict_and_json_exactly(name, ops, tensors, params, assumptions):
    import json

    ledger = Ledger(name=name, ops=ops, tensors=tensors, params_by_scope=params, assumptions=assumptions)
    again = Ledger.from_dict(json.loads(json.dumps(ledger.to_dict())))
    assert again == ledger
    assert again.totals() == ledger.totals() and again.by_scope() == ledger.by_scope()


@pytest.mark.parametrize("broken", [{}, {"name": "m", "ops": [{"op": "x"}], "tensors": [], "params_by_scope": {},
                                         "assumptions": []},
                                    {"name": "m", "ops": [], "tensors": [], "params_by_scope": {}, "assumptions": [],
                                     "extra": 1} | {"ops": [{"kind": "nope"}]}])
def test_from_dict_refuses_what_to_dict_did_not_write(broken):
    with pytest.raises((KeyError, TypeError, ValueError)):
        Ledger.from_dict(broken)


def test_conv_metadata_survives_a_json_round_trip():
    import json

    from sizeup.ledger import Ledger, OpKind, OpRecord

    ledger = Ledger(ops=[OpRecord(op="aten.convolution", kind=OpKind.CONV, scope="c", flops=10, matmul_flops=10,
                                  conv_kernel=(3, 3), conv_stride=(1, 1))])
    again = Ledger.from_dict(json.loads(json.dumps(ledger.to_dict())))
    assert again == ledger and again.ops[0].conv_kernel == (3, 3)
