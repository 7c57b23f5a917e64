from sizeup.ledger import TensorSpec as T
from sizeup.ops import OpCall, cost_of


def test_mm_is_2mnk_and_reads_both_operands():
    kind, cost, counted = cost_of(OpCall(op="aten.mm", args=(T(shape=(4, 8)), T(shape=(8, 16))),
                                         outputs=(T(shape=(4, 16)),)))
    assert counted and kind.value == "matmul"
    assert cost.flops == cost.matmul_flops == 2 * 4 * 16 * 8
    assert cost.bytes_read == (32 + 128) * 4 and cost.bytes_written == 64 * 4


def test_bmm_counts_every_batch_and_addmm_adds_bias():
    bmm = cost_of(OpCall(op="aten.bmm", args=(T(shape=(3, 4, 8)), T(shape=(3, 8, 5))), outputs=(T(shape=(3, 4, 5)),)))[1]
    assert bmm.flops == 3 * 2 * 4 * 5 * 8
    addmm = cost_of(OpCall(op="aten.addmm", args=(T(shape=(5,)), T(shape=(4, 8)), T(shape=(8, 5))),
                           outputs=(T(shape=(4, 5)),)))[1]
    assert addmm.flops == 2 * 4 * 5 * 8 + 20 and addmm.matmul_flops == 2 * 4 * 5 * 8


def test_in_place_variant_falls_back_to_base_formula():
    cost = cost_of(OpCall(op="aten.add_", args=(T(shape=(10,)), T(shape=(10,))), outputs=(T(shape=(10,)),)))
    assert cost[2] and cost[1].flops == 10


def test_unknown_op_counts_bytes_and_is_flagged():
    kind, cost, counted = cost_of(OpCall(op="mylib.fancy", args=(T(shape=(10,)),), outputs=(T(shape=(10,)),)))
    assert not counted and kind.value == "other"
    assert cost.flops == 0 and cost.bytes_read == 40 and cost.bytes_written == 40


def test_registering_a_name_twice_raises():
    import pytest

    from sizeup.ledger import OpKind
    from sizeup.ops import op_cost

    with pytest.raises(ValueError, match="already registered"):
        op_cost("aten.mm", kind=OpKind.MATMUL)(lambda call: None)
