"""What `sizeup train` picks when the user does not say: the micro-batch (the largest whose whole memory range fits,
the typical-figure fit only where none does, the rule stated) and the QLoRA note naming the dtypes that were priced
(workload/training/estimate.py _default_micro_batch, _qlora_precisions)."""

from sizeup import api


def test_the_default_micro_batch_fits_its_whole_range():
    e = api.train("llama-3.1-8b", device="rtx-4090", method="qlora")
    assert e.max_micro_batch_in_range < e.max_micro_batch  # the typical figure alone would take more
    assert e.micro_batch == e.max_micro_batch_in_range and e.micro_batch_rule == "range"
    assert e.fit.verdict == "fits"
    assert any(a.startswith(f"micro-batch {e.micro_batch}: the largest whose memory range's high end fits")
               for a in e.assumptions)
    assert e.to_dict()["micro_batch_rule"] == "range"


def test_the_typical_fit_only_where_nothing_fits_the_range():
    from sizeup.workload.training.estimate import _default_micro_batch

    assert _default_micro_batch(None, 9, 2)[:2] == (2, "range")
    mb, rule, note = _default_micro_batch(None, 3, 0)
    assert (mb, rule) == (3, "typical") and "not even micro-batch 1 fits the memory range's high end" in note
    assert _default_micro_batch(None, 0, 0)[:2] == (1, "none")
    assert _default_micro_batch(5, 9, 2) == (5, "given", None)


def test_a_given_micro_batch_is_kept():
    e = api.train("llama-3.1-8b", device="rtx-4090", method="qlora", micro_batch=9)
    assert e.micro_batch == 9 and e.micro_batch_rule == "given"
    assert not any(a.startswith("micro-batch 9:") for a in e.assumptions)


def _qlora_note(**kw) -> str:
    e = api.train("llama-3.1-8b", device="l4", method="qlora", micro_batch=1, **kw)
    return next(a for a in e.assumptions if a.startswith("QLoRA: NF4"))


def test_the_qlora_note_names_what_trl_prices():
    # trl: PEFT's fp32 adapters and prepare_model_for_kbit_training's fp32 embeddings, norms and head
    note = _qlora_note()
    assert "fp32 adapters" in note and "LM head in fp32" in note and "upcast to fp32" in note
    assert "bf16 adapters" not in note


def test_the_qlora_note_names_bf16_adapters_where_a_framework_keeps_them():
    note = _qlora_note(framework="unsloth")
    assert "bf16 adapters" in note and "LM head in bf16" in note and "upcast" not in note


def test_the_qlora_note_follows_the_flags():
    note = _qlora_note(adapter_dtype="base", kbit_upcast=False)
    assert "bf16 adapters" in note and "embeddings and norms in bf16" in note
