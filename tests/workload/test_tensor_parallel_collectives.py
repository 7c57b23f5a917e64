"""Under attention data parallelism a layer's experts sit between an all-gather of the ranks' hidden states and a
reduce-scatter of the result: the same full tensor, so the same ring volume (the reduce-scatter writes 1/tp of what
it reads; it was priced on that 1/tp, tp times too cheap)."""

from __future__ import annotations

from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.load import load_model
from sizeup.ingest.transformer_ops import Step, step_ledger
from sizeup.ledger import Ledger, OpKind
from sizeup.workload.quantize import get_format
from sizeup.workload.tensor_parallel import tensor_parallel_comm


def test_the_experts_all_gather_and_reduce_scatter_cost_the_same():
    device = load_catalog(include_user=False).device("h200-sxm-141gb")
    ledger = step_ledger(load_model("mixtral-8x7b"), Step(batch=512, new_tokens=1, context=1024), get_format("fp8"),
                         "fp8", "bf16", 8, 8)
    ops = {o.op: o for o in ledger.ops if o.kind == OpKind.COMM and o.scope.endswith("experts")}
    assert set(ops) == {"all_gather", "reduce_scatter"}
    times = {}
    for kind, op in ops.items():
        times[kind] = tensor_parallel_comm(Ledger(ops=[op]), device, 8, None)[0].typical
    assert times["all_gather"] > 0 and abs(times["all_gather"] - times["reduce_scatter"]) < 1e-12
