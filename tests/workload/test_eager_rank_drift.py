"""Rank drift of eager tensor parallelism (workload/tensor_parallel.py eager_rank_drift): vLLM before 0.2.6 launches
every decode kernel from Python on each GPU's process, so where the step is host-bound each collective waits for the
latest rank; from 0.2.6 the decode step is a CUDA graph and nothing is added."""

import pytest

from sizeup import api
from sizeup.engines import resolve
from sizeup.engines.base import TensorParallel
from sizeup.hardware.catalog import load_catalog
from sizeup.ledger import Ledger, OpKind, OpRecord
from sizeup.price.comm import eager_rank_wait
from sizeup.workload.tensor_parallel import eager_rank_drift, tensor_parallel_comm

CATALOG = load_catalog(include_user=False)
A100 = CATALOG.device("a100-pcie-80gb")
LEDGER = Ledger(ops=[OpRecord(op="all_reduce", kind=OpKind.COMM, scope="layers", bytes_written=16384, count=160)])


def test_a_host_bound_step_waits_the_full_drift_at_every_collective():
    drift, notes = eager_rank_drift(LEDGER, A100, 8, TensorParallel(eager_launches=True),
                                    {"memory": 1e-3, "compute": 0.0, "overhead": 5e-3})
    assert drift.typical == pytest.approx(160 * eager_rank_wait(8, "nvidia").typical)
    assert "rank drift" in notes[0]


def test_the_drift_scales_with_the_host_bound_share_and_vanishes_under_a_graph():
    half, _ = eager_rank_drift(LEDGER, A100, 4, TensorParallel(eager_launches=True), {"memory": 2e-3, "overhead": 1e-3})
    assert half.typical == pytest.approx(160 * 0.5 * eager_rank_wait(4, "nvidia").typical)
    none, notes = eager_rank_drift(LEDGER, A100, 4, TensorParallel(), {"memory": 1e-3, "overhead": 5e-3})
    assert none.typical == 0 and notes == []


def test_vllm_releases_before_cuda_graphs_add_it_and_later_ones_do_not():
    old, new = resolve("vllm@0.2.0", A100), resolve("vllm@0.2.6", A100)
    assert not old.graphs and new.graphs
    by_bound = {"memory": 1e-3, "overhead": 5e-3}
    old_comm, _, old_notes = tensor_parallel_comm(LEDGER, A100, 8, old, by_bound)
    new_comm, _, new_notes = tensor_parallel_comm(LEDGER, A100, 8, new, by_bound)
    assert old_comm.typical - new_comm.typical == pytest.approx(160 * eager_rank_wait(8, "nvidia").typical)
    assert any("rank drift" in n for n in old_notes) and not any("rank drift" in n for n in new_notes)


def test_an_estimate_of_eager_vllm_over_eight_pcie_gpus_says_so():
    est = api.estimate("llama-2-70b", device="a100-pcie-80gb", gpus=8, engine="vllm@0.2.0", quant="fp16", batch=1,
                       prompt=8, output=256)
    assert any("rank drift" in a for a in est.assumptions)
    assert any("captures no graph" in a for a in est.assumptions)
