"""PEFT's fp32 adapters on a bf16 base, checked against PyTorch's autograd: what one more decoder layer of
transformers' LlamaForCausalLM under peft.get_peft_model keeps for backward (CPU, bf16, tiny config, SDPA, no
dropout), with the adapters in the base's dtype (autocast_adapter_dtype=False) and in PEFT's default fp32
(autocast_adapter_dtype=True), without autocast (sizeup's precision bf16) and under torch.autocast (bf16-mixed,
what transformers' Trainer runs with bf16=True), for LoRA and DoRA on q_proj, v_proj and on all linears.

Measured: the distinct non-parameter storages still held by the graph after the forward pass (each saved tensor
is boxed by a saved_tensors_hooks pack hook; a box dies with the graph node that holds it, so transients such as
DoRA's weight-norm graph over an identity matrix are not counted), a two-layer model minus a one-layer one.
Predicted: kept_layer_bytes with eager kernels; every case is exact. Before the fp32 adapters were modelled sizeup
counted PEFT's default LoRA as bf16 adapters: -15.2% (q, v) and -38.0% (all-linear) of the pure-bf16 measurement,
-7.9% / -23.0% under autocast; DoRA's two output-width tensors per adapter were not counted at all.

Not in either count, added as small terms: the attention's fp32 log-sum-exp (per head and position), each RMSNorm's
fp32 reciprocal root (per position) and, under DoRA, three vectors of the output width per adapter (the weight norm
read by the division, the magnitude scale read by the two products), in the magnitude's dtype.
K/V heads equal the query heads here: transformers 5.24's SDPA path passes grouped K/V to
scaled_dot_product_attention with enable_gqa (integrations/sdpa_attention.py use_gqa_in_sdpa: no mask and head
dim <= 256) instead of repeating them, which sizeup's eager term still counts."""

import contextlib
import gc
import weakref

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

from sizeup.ingest.hf_config import parse_config  # noqa: E402
from sizeup.workload.finetune import FinetuneSpec  # noqa: E402
from sizeup.workload.training import TrainingConfig  # noqa: E402
from sizeup.workload.training.activations import kept_layer_bytes  # noqa: E402

H, HEADS, INTER, B, S, R, VOCAB = 64, 4, 172, 2, 16, 4, 128
TARGETS = {"qv": ["q_proj", "v_proj"], "all": "all-linear"}
OUT_WIDTHS = {"qv": H + H, "all": 4 * H + 2 * INTER + H}  # q, v | q, k, v, o, gate, up, down


class _Box:
    __slots__ = ("t", "__weakref__")

    def __init__(self, t):
        self.t = t


def saved_bytes(layers: int, targets, fp32: bool, autocast: bool, dora: bool) -> int:
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = transformers.LlamaConfig(hidden_size=H, num_attention_heads=HEADS, num_key_value_heads=HEADS,
                                      intermediate_size=INTER, num_hidden_layers=layers, vocab_size=VOCAB,
                                      max_position_embeddings=64, attn_implementation="sdpa")
    model = transformers.LlamaForCausalLM(config).to(torch.bfloat16)
    model = peft.get_peft_model(model, peft.LoraConfig(r=R, target_modules=targets, use_dora=dora),
                                autocast_adapter_dtype=fp32)
    model.train()
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    boxes = weakref.WeakSet()

    def pack(t):
        box = _Box(t)
        boxes.add(box)
        return box

    ids = torch.randint(0, VOCAB, (B, S))
    ctx = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda box: box.t), ctx:
        out = model(input_ids=ids, labels=ids)
    gc.collect()
    kept = {b.t.untyped_storage().data_ptr(): b.t.untyped_storage().nbytes() for b in list(boxes)}
    del out
    return sum(n for ptr, n in kept.items() if ptr not in params)


def predicted(targets: str, method: str, adapter_dtype: str, precision: str) -> int:
    arch = parse_config({"model_type": "llama", "hidden_size": H, "num_attention_heads": HEADS,
                         "num_key_value_heads": HEADS, "intermediate_size": INTER, "num_hidden_layers": 1,
                         "vocab_size": VOCAB, "max_position_embeddings": 64})
    t = ("all-linear",) if targets == "all" else tuple(TARGETS[targets])
    cfg = TrainingConfig(seq=S, kernels="eager", precision=precision,
                         finetune=FinetuneSpec(method=method, rank=R, targets=t, adapter_dtype=adapter_dtype))
    tokens = B * S
    small = 4 * tokens * HEADS + 2 * 4 * tokens
    if method == "dora":
        small += 3 * OUT_WIDTHS[targets] * (4 if adapter_dtype == "fp32" else 2)
    return kept_layer_bytes(arch, arch.layers[0], cfg, B, "none", 2) + small


CASES = [(targets, method, fp32, autocast) for targets in TARGETS for method in ("lora", "dora")
         for fp32, autocast in ((False, False), (True, False), (True, True))]


@pytest.mark.parametrize("targets,method,fp32,autocast", CASES)
def test_a_llama_layer_under_peft_keeps_what_autograd_saves(targets, method, fp32, autocast):
    per_layer = saved_bytes(2, TARGETS[targets], fp32, autocast, method == "dora") - \
        saved_bytes(1, TARGETS[targets], fp32, autocast, method == "dora")
    expected = predicted(targets, method, "fp32" if fp32 else "base", "bf16-mixed" if autocast else "bf16")
    assert expected == per_layer


def test_peft_adapter_states_are_fp32_as_sizeup_counts():
    """One AdamW step on the tiny Llama under PEFT's default: the adapter weights, their gradients and AdamW's
    two moments are float32 (4 + 4 + 8 bytes per adapter parameter), as training_memory counts fp32 adapters."""
    from sizeup.hardware.catalog import load_catalog
    from sizeup.workload.training import training_memory

    torch.manual_seed(0)
    config = transformers.LlamaConfig(hidden_size=H, num_attention_heads=HEADS, num_key_value_heads=HEADS,
                                      intermediate_size=INTER, num_hidden_layers=1, vocab_size=VOCAB,
                                      max_position_embeddings=64)
    model = peft.get_peft_model(transformers.LlamaForCausalLM(config).to(torch.bfloat16),
                                peft.LoraConfig(r=R, target_modules=["q_proj", "v_proj"]))
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable)
    ids = torch.randint(0, VOCAB, (B, S))
    model(input_ids=ids, labels=ids).loss.backward()
    opt.step()
    n = sum(p.numel() for p in trainable)
    assert sum(p.element_size() * p.numel() for p in trainable) == 4 * n
    assert sum(p.grad.element_size() * p.grad.numel() for p in trainable) == 4 * n
    assert sum(s[k].element_size() * s[k].numel() for s in opt.state.values() for k in ("exp_avg", "exp_avg_sq")) \
        == 8 * n
    arch = parse_config({"model_type": "llama", "hidden_size": H, "num_attention_heads": HEADS,
                         "num_key_value_heads": HEADS, "intermediate_size": INTER, "num_hidden_layers": 1,
                         "vocab_size": VOCAB, "max_position_embeddings": 64})
    cfg = TrainingConfig(seq=S, precision="bf16", finetune=FinetuneSpec(method="lora", rank=R, adapter_dtype="fp32"))
    m = training_memory(arch, load_catalog(include_user=False).device("h100"), cfg, B)
    assert (m.gradients_bytes, m.optimizer_bytes) == (4 * n, 8 * n)
