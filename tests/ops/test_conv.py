"""Convolution FLOPs against the reference write-up's hand arithmetic."""

from sizeup.ledger import TensorSpec as T
from sizeup.ops import OpCall, cost_of


def conv(x, w, out, bias=None, stride=(1, 1), padding=(0, 0), transposed=False, groups=1):
    return cost_of(OpCall(op="aten.convolution",
                          args=(T(shape=x), T(shape=w), bias and T(shape=bias), stride, padding, (1, 1),
                                transposed, (0, 0), groups),
                          outputs=(T(shape=out),)))[1]


def test_pointwise_conv_matches_write_up():
    # 2 × (64·128·1·1) × (64·64) = 67,108,864 (reference write-up, C2f cv1)
    assert conv((1, 64, 64, 64), (128, 64, 1, 1), (1, 128, 64, 64)).flops == 67_108_864


def test_3x3_conv_matches_write_up():
    # 2 × (64·64·3·3) × (64·64) = 301,989,888
    assert conv((1, 64, 64, 64), (64, 64, 3, 3), (1, 64, 64, 64), padding=(1, 1)).flops == 301_989_888


def test_depthwise_conv_counts_one_input_channel_per_output():
    # groups = 64: each output channel sees 1 input channel: 2 · 64 · 9 · 4096
    cost = conv((1, 64, 64, 64), (64, 1, 3, 3), (1, 64, 64, 64), padding=(1, 1), groups=64)
    assert cost.flops == 2 * 64 * 9 * 4096


def test_bias_adds_one_flop_per_output_and_is_not_a_matrix_product():
    cost = conv((2, 3, 8, 8), (16, 3, 3, 3), (2, 16, 6, 6), bias=(16,))
    product = 2 * 2 * 16 * 36 * 3 * 9
    assert cost.flops == product + 2 * 16 * 36
    assert cost.matmul_flops == product


def test_strided_and_3d_conv():
    assert conv((1, 8, 16, 16), (4, 8, 3, 3), (1, 4, 8, 8), stride=(2, 2), padding=(1, 1)).flops == 2 * 4 * 64 * 8 * 9
    cost = cost_of(OpCall(op="aten.convolution",
                          args=(T(shape=(1, 2, 4, 4, 4)), T(shape=(3, 2, 3, 3, 3)), None, (1, 1, 1), (1, 1, 1),
                                (1, 1, 1), False, (0, 0, 0), 1),
                          outputs=(T(shape=(1, 3, 4, 4, 4)),)))[1]
    assert cost.flops == 2 * 3 * 64 * 2 * 27


def test_transposed_conv_scatters_each_input():
    # weight [C_in, C_out/groups, k, k]; 2 · N · C_in · H_in·W_in · C_out · k²
    cost = conv((1, 16, 8, 8), (16, 8, 2, 2), (1, 8, 16, 16), stride=(2, 2), transposed=True)
    assert cost.flops == 2 * 16 * 64 * 8 * 4


def test_convolution_backward_is_twice_forward_without_bias():
    fwd = conv((2, 8, 10, 10), (4, 8, 3, 3), (2, 4, 8, 8)).flops
    bwd = cost_of(OpCall(op="aten.convolution_backward",
                         args=(T(shape=(2, 4, 8, 8)), T(shape=(2, 8, 10, 10)), T(shape=(4, 8, 3, 3)), None,
                               (1, 1), (0, 0), (1, 1), False, (0, 0), 1, [True, True, False]),
                         outputs=(T(shape=(2, 8, 10, 10)), T(shape=(4, 8, 3, 3)))))[1]
    assert bwd.flops == 2 * fwd


def test_conv_window_names_the_filter_and_stride_of_a_dense_forward_conv():
    """What price.conv_algos needs to know a Winograd-eligible convolution (3x3, stride 1, undilated, dense)."""
    from sizeup.ledger import TensorSpec as T
    from sizeup.ops.conv import conv_window

    def call(w, stride, dilation=(1, 1), groups=1, transposed=False):
        return OpCall(op="aten.convolution", args=(T(shape=(8, 64, 56, 56)), T(shape=w), None, stride, (1, 1),
                                                   dilation, transposed, (0, 0), groups))
    assert conv_window(call((64, 64, 3, 3), (1, 1))) == ((3, 3), (1, 1))
    assert conv_window(call((128, 64, 3, 3), [2, 2])) == ((3, 3), (2, 2))
    assert conv_window(call((64, 64, 1, 1), 1)) == ((1, 1), (1, 1))
    assert conv_window(call((64, 1, 3, 3), (1, 1), groups=64)) == ((), ())  # depthwise
    assert conv_window(call((64, 64, 3, 3), (1, 1), dilation=(2, 2))) == ((), ())
