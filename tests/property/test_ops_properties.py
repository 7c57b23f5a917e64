"""Invariants of the cost formulas and the tracer (hypothesis)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sizeup.ledger import TensorSpec as T
from sizeup.ops import OpCall, cost_of

dims = st.integers(min_value=1, max_value=64)


@given(m=dims, n=dims, k=dims, batch=st.integers(1, 8))
def test_matmul_linear_in_batch(m, n, k, batch):
    one = cost_of(OpCall(op="aten.bmm", args=(T(shape=(1, m, k)), T(shape=(1, k, n))), outputs=(T(shape=(1, m, n)),)))[1]
    many = cost_of(OpCall(op="aten.bmm", args=(T(shape=(batch, m, k)), T(shape=(batch, k, n))),
                          outputs=(T(shape=(batch, m, n)),)))[1]
    assert many.flops == batch * one.flops
    assert many.bytes_read == batch * one.bytes_read


@given(n=st.integers(1, 4), cin=st.integers(1, 16), cout=st.integers(1, 16), k=st.sampled_from([1, 3, 5]),
       hw=st.integers(5, 16))
def test_conv_backward_twice_forward(n, cin, cout, k, hw):
    out_hw = hw - k + 1
    x, w, y = T(shape=(n, cin, hw, hw)), T(shape=(cout, cin, k, k)), T(shape=(n, cout, out_hw, out_hw))
    fwd = cost_of(OpCall(op="aten.convolution", args=(x, w, None, (1, 1), (0, 0), (1, 1), False, (0, 0), 1),
                         outputs=(y,)))[1]
    bwd = cost_of(OpCall(op="aten.convolution_backward",
                         args=(y, x, w, None, (1, 1), (0, 0), (1, 1), False, (0, 0), 1, [True, True, False]),
                         outputs=(x, w)))[1]
    assert bwd.flops == 2 * fwd.flops


torch = pytest.importorskip("torch")


class _ScaledMLP(torch.nn.Module):
    """A parameter scales the input first, so every matmul's input needs a gradient."""

    def __init__(self, d_in, d_hidden):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(d_in))
        self.fc1 = torch.nn.Linear(d_in, d_hidden, bias=False)
        self.conv = torch.nn.Conv1d(1, 2, 3, bias=False)

    def forward(self, x):
        y = self.fc1(x * self.scale)
        return self.conv(y.unsqueeze(1))


@settings(max_examples=10, deadline=None)
@given(batch=st.integers(1, 6), d_in=st.integers(2, 32), d_hidden=st.integers(3, 32))
def test_traced_backward_products_twice_forward(batch, d_in, d_hidden):
    from sizeup.ingest.torch_trace import InputSpec, TraceMode, trace_module

    ledger = trace_module(lambda: _ScaledMLP(d_in, d_hidden), [InputSpec(shape=(batch, d_in))], mode=TraceMode.BACKWARD)
    phases = ledger.by_phase()
    assert phases["backward"].matmul_flops == 2 * phases["forward"].matmul_flops
