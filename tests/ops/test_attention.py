from sizeup.ledger import TensorSpec as T
from sizeup.ops import OpCall, cost_of


def sdpa(q, k, v, causal=False, op="aten._scaled_dot_product_flash_attention_for_cpu"):
    return cost_of(OpCall(op=op, args=(T(shape=q), T(shape=k), T(shape=v), 0.0, causal),
                          outputs=(T(shape=q[:-1] + (v[-1],)), T(shape=q[:-1]))))[1]


def test_fused_attention_counts_two_products_and_softmax():
    b, h, lq, lk, d = 2, 8, 128, 128, 64
    cost = sdpa((b, h, lq, d), (b, h, lk, d), (b, h, lk, d))
    scores = b * h * lq * lk
    assert cost.matmul_flops == 2 * scores * d * 2
    assert cost.flops == cost.matmul_flops + 5 * scores
    # fused: the scores never reach memory
    assert cost.bytes_read == 3 * b * h * lq * d * 4


def test_gqa_uses_query_heads_and_causal_is_noted():
    cost = sdpa((1, 8, 16, 32), (1, 2, 16, 32), (1, 2, 16, 32), causal=True)
    assert cost.matmul_flops == 2 * (8 * 16 * 16) * 32 * 2
    assert any("causal" in n for n in cost.notes)


def test_backward_is_two_and_a_half_forward_products():
    q = (1, 4, 64, 32)
    fwd = sdpa(q, q, q)
    bwd = cost_of(OpCall(op="aten._scaled_dot_product_flash_attention_for_cpu_backward",
                         args=(T(shape=q), T(shape=q), T(shape=q), T(shape=q), T(shape=q), T(shape=q[:-1]), 0.0, False),
                         outputs=(T(shape=q),) * 3))[1]
    assert bwd.matmul_flops * 2 == fwd.matmul_flops * 5
