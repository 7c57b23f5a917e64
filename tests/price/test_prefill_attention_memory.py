"""Prefill memory under the hf engine follows the attention kernel that runs (issue 16 item 4)."""

from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model
from sizeup.engines import resolve
from sizeup.price.memory import MemoryConfig, inference_memory
from sizeup.workload.quantize import get_format

BERT = load_model("bert-base-uncased")
T4 = load_catalog(include_user=False).device("t4")


def _memory(**kw):
    return inference_memory(BERT, resolve("hf", T4), MemoryConfig(batch=8, context=512, prompt=512,
                                                                      weights=get_format("fp16"), **kw))


def test_eager_prefill_holds_one_layers_scores_and_softmax():
    sdpa, eager = _memory(), _memory(attention="eager")
    # 8 sequences × 12 heads × 512² scores, fp16, the scores and their softmax output live together
    assert eager.activations_bytes - sdpa.activations_bytes == 2 * 2 * 8 * 12 * 512 * 512
    assert any("fused kernel (mem_efficient" in n for n in sdpa.notes)
    assert any("eager runs the math path" in n for n in eager.notes)


def test_bf16_on_a_t4_has_no_fused_kernel():
    assert _memory(compute_dtype="bf16").activations_bytes == _memory(attention="eager").activations_bytes


def test_a_state_space_model_keeps_no_attention_scores():
    """Mamba layers carry NO_ATTENTION (one head of width 0): the math path on a T4 in bf16 must not add a
    phantom s² score tensor (it added 2 × 2 × 32768² bytes = 4 GiB at a 32k prompt) nor an attention note."""
    from pathlib import Path

    mamba = load_model(str(Path(__file__).resolve().parents[1] / "ingest" / "configs" / "mamba-130m-hf.json"))
    cfg = dict(batch=1, weights=get_format("fp16"), compute_dtype="bf16", attention="eager")
    short = inference_memory(mamba, resolve("hf", T4), MemoryConfig(context=1024, prompt=1024, **cfg))
    long = inference_memory(mamba, resolve("hf", T4), MemoryConfig(context=32768, prompt=32768, **cfg))
    assert long.activations_bytes < 40 * short.activations_bytes  # linear in the prompt, not quadratic
    assert not any(n.startswith("attention:") for n in long.notes)
