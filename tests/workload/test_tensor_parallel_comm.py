"""Tensor-parallel collectives of an inference step (workload/inference.py `tensor_parallel_comm`): NCCL's ring on
the device's link unless the engine names its own all-reduce (ExecutionModel.tensor_parallel), and that one only
under its size cap (vLLM: 8 MiB, custom_all_reduce.py should_custom_ar)."""

import pytest

from sizeup.engines import resolve
from sizeup.hardware.catalog import load_catalog
from sizeup.ledger import Ledger
from tests.workload.ledgers import all_reduce_ledger
from sizeup.price.comm import collective_time, device_link
from sizeup.workload.inference import tensor_parallel_comm

CATALOG = load_catalog(include_user=False)
H100 = CATALOG.device("h100-sxm-80gb")


def _ledger(nbytes: int, layers: int = 80) -> Ledger:
    return all_reduce_ledger(nbytes, layers)


def test_without_an_engine_hook_the_ring_of_the_link_prices_it():
    comm, host, notes = tensor_parallel_comm(_ledger(16384), H100, 8, None)
    assert comm.typical == pytest.approx(160 * collective_time("all_reduce", 16384, 8, device_link(H100)).typical)
    assert host.typical == 0 and notes == []


def test_vllms_custom_all_reduce_prices_small_messages_and_leaves_large_ones_to_nccl():
    vllm = resolve("vllm", H100)
    custom = vllm.profile.range("custom_all_reduce_latency_s")
    ring = device_link(H100)
    small, _, notes = tensor_parallel_comm(_ledger(16384), H100, 8, vllm)
    assert small.typical == pytest.approx(160 * (custom.typical + collective_time("all_reduce", 16384, 8, ring).typical
                                                 - ring.latency_s.typical))
    assert any("custom all-reduce" in n for n in notes)
    big = 16 * 2**20  # a long prompt's hidden states, over the 8 MiB buffer
    large, _, _ = tensor_parallel_comm(_ledger(big), H100, 8, vllm)
    assert large.typical == pytest.approx(160 * collective_time("all_reduce", big, 8, ring).typical)
