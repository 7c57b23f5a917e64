"""The adapter activation rule checked against PyTorch itself: what autograd saves for a gated MLP with
trained weights, with frozen weights, and with a LoRA adapter on one projection (CPU, fp32)."""

import pytest

torch = pytest.importorskip("torch")
from tests.workload.saved_storage import saved_storages  # noqa: E402
F = torch.nn.functional

H, INTER, TOKENS, RANK = 64, 172, 32, 8


def saved_activation_bytes(frozen: bool, adapter_on_up: bool = False) -> int:
    """Bytes of the distinct non-parameter tensors autograd keeps for backward."""
    torch.manual_seed(0)
    gate, up, down = (torch.nn.Linear(i, o, bias=False) for i, o in ((H, INTER), (H, INTER), (INTER, H)))
    params = {p.data_ptr() for m in (gate, up, down) for p in m.parameters()}
    for m in (gate, up, down):
        m.weight.requires_grad_(not frozen)
    a = torch.nn.Parameter(torch.randn(RANK, H))
    b = torch.nn.Parameter(torch.zeros(INTER, RANK))
    params |= {a.data_ptr(), b.data_ptr()}
    x = torch.randn(TOKENS, H, requires_grad=True)
    with saved_storages(params) as kept:
        xn = x * 2.0  # the norm's output: a fresh tensor, as in a decoder layer
        u = up(xn) + ((xn @ a.t()) @ b.t() if adapter_on_up else 0)
        down(F.silu(gate(xn)) * u).sum().backward()
    return sum(kept.values())


def test_frozen_weights_keep_neither_the_mlp_input_nor_the_product():
    full, frozen = saved_activation_bytes(frozen=False), saved_activation_bytes(frozen=True)
    assert full - frozen == 4 * TOKENS * (H + INTER)  # the MLP input and the gate·up product (fp32)


def test_an_adapter_keeps_the_input_it_reads():
    frozen = saved_activation_bytes(frozen=True)
    adapted = saved_activation_bytes(frozen=True, adapter_on_up=True)
    assert adapted - frozen == 4 * TOKENS * (H + RANK)  # the input again, plus the rank-wide x·Aᵀ
