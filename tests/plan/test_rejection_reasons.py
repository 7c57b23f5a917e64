"""A serving plan's 'does not fit' rejection says what does not fit (plan/serving.py `_does_not_fit`)."""
from types import SimpleNamespace

from sizeup.plan.serving import _does_not_fit
from sizeup.ranges import Range

GIB = 2**30


def _memory(total: float, usable: float, pool: float, needed: float):
    return SimpleNamespace(total_bytes=total * GIB, usable_bytes=Range(usable * GIB, usable * GIB, usable * GIB),
                           kv_cache_bytes=pool * GIB, kv_cache_needed_bytes=needed * GIB)


def test_a_total_over_the_usable_memory_names_both():
    assert _does_not_fit(_memory(137.0, 78.8, 0.0, 1.1)) == "does not fit: 137.0 GiB needed per GPU, 78.8 GiB usable"


def test_a_total_under_the_usable_memory_names_the_engines_kv_pool():
    """vLLM takes gpu_memory_utilization of the GPU up front: 70B fp8 on one H100 counts 73 GiB of 78.8 usable, but
    its budget leaves no KV pool. The reason must not read '73.3 GiB needed, 78.8 usable' as if that did not fit."""
    reason = _does_not_fit(_memory(73.3, 78.8, 0.0, 1.13))
    assert reason.startswith("does not fit: the engine's KV-cache pool holds 0.00 GiB of the 1.13 GiB")
    assert "73.3" not in reason
