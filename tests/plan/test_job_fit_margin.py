"""The fine-tuning planner treats "may not fit" as the edge planner does (tests/plan/test_edge_fit_margin.py): a
candidate's memory range must fit whole. The largest micro-batch that fits at the typical figure is replaced by the
largest whose range's high end fits (workload/training/estimate.py max_micro_batch_in_range); where even micro-batch 1
only fits at the typical figure, the GPU count is rejected as "may not fit"."""

from sizeup.hardware.catalog import load_catalog
from sizeup.plan.recommend import plan_scenario
from sizeup.plan.scenario import parse_scenario
from sizeup.workload.device_fit import training_fit_verdict

CATALOG = load_catalog(include_user=False)
FINETUNE = {"name": "f", "model": "qwen2.5-14b", "task": "finetune",
            "job": {"method": "qlora", "tokens": 10_000_000, "seq": 4096}, "constraints": {"devices": ["l4", "a10g"]}}


def test_a_fine_tune_whose_range_does_not_fit_is_rejected_as_may_not_fit():
    result = plan_scenario(parse_scenario(FINETUNE), CATALOG)
    one = next(r for r in result.rejected if r.family == "1x l4 qlora")
    assert one.reason.startswith("may not fit: the high end of the memory range")  # typical fits (no "does not fit")
    assert result.chosen is not None and result.chosen.gpus > 1  # more GPUs: the range fits whole


def test_the_in_range_micro_batch_fits_whole():
    from sizeup import api

    e = api.train("llama-3.1-8b", device="a100-sxm-80gb", method="qlora")  # the default: the range's high end fits
    assert 1 <= e.max_micro_batch_in_range < e.max_micro_batch and e.micro_batch == e.max_micro_batch_in_range
    assert training_fit_verdict(e).comfortable and e.to_dict()["fit"] == "fits"
    typical = api.train("llama-3.1-8b", device="a100-sxm-80gb", method="qlora", micro_batch=e.max_micro_batch)
    data = typical.to_dict()
    assert data["fit"] == "may not fit" and "exceeds" in data["fit_note"] and data["fits"] is True
    assert data["max_micro_batch_in_range"] == e.max_micro_batch_in_range
