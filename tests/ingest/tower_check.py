"""The comparison both tower-vs-torch test files make: an analytic tower ledger's ops against the ops traced
from transformers' own module. Matrix-product FLOPs equal exactly; all FLOPs within 0.1% (elementwise
conventions differ: GELU, the norms, the average pool)."""

import pytest


def _sums(ops) -> tuple[int, int]:
    return sum(o.flops * o.count for o in ops), sum(o.matmul_flops * o.count for o in ops)


def assert_same_work(analytic, traced) -> None:
    (flops, matmul), (t_flops, t_matmul) = _sums(analytic), _sums(traced)
    assert matmul == t_matmul
    assert flops == pytest.approx(t_flops, rel=1e-3)
