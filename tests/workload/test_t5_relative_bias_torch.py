"""T5's relative-position bias under SDPA, checked against what autograd saves (CPU, bf16, tiny config).

transformers 5.x hands the bias to SDPA as a float attn_mask (integrations/sdpa_attention.py,
create_position_bias_mask). On a GPU flash refuses a mask and the memory-efficient kernel runs; CPU has no such
kernel, so the test stands one in for it: what its autograd node keeps (the saved fields are read from the real
ScaledDotProductEfficientAttentionBackward0 on the meta device), with PyTorch's mask preparation (attention.cpp
preprocess_mask: pad the last dimension to 8, expand over the batch) and its output layout (batch, sequence,
heads, dim, returned transposed). Everything upstream of the kernel (the per-layer copies of the bias, the causal
`where`, the layers themselves) is transformers' own code.

Measured: the distinct non-parameter storages saved by a model with one layer more on one side, minus the
one-and-one model. Predicted: sizeup's activation_bytes for the same two models (eager kernels, fused attention).
The kernel's fp32 log-sum-exp (batch × heads × queries rounded up to 32, 4 bytes) is left out of both: sizeup's
fused count (Korthikanti et al.) does not hold it, < 1% of a layer at real widths, 3-7% at this one's."""

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from sizeup.ingest.families.registry import parse_config  # noqa: E402
from sizeup.workload.training import TrainingConfig  # noqa: E402
from sizeup.workload.training.activations import activation_bytes  # noqa: E402
from sizeup.workload.training.encoder_decoder import MASK_ALIGNMENT  # noqa: E402
from tests.workload.saved_storage import parameter_storages, saved_storages  # noqa: E402

SIZES = {"vocab_size": 64, "d_model": 32, "d_kv": 8, "num_heads": 4, "d_ff": 64, "feed_forward_proj": "relu"}
BATCH, TARGET = 2, 8


def test_the_efficient_kernel_keeps_its_mask():
    q, k, v = (torch.randn(2, 4, 16, 8, device="meta", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    bias = torch.randn(1, 4, 16, 16, device="meta", dtype=torch.bfloat16).expand(2, 4, 16, 16)
    node = torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, bias, True)[0].grad_fn
    saved = {a for a in dir(node) if a.startswith("_saved_")}
    assert {"_saved_attn_bias", "_saved_query", "_saved_key", "_saved_value", "_saved_output",
            "_saved_log_sumexp"} <= saved


class _Efficient(torch.autograd.Function):
    """Forward of SDPA with an additive mask; keeps what the memory-efficient kernel's node keeps."""

    @staticmethod
    def forward(ctx, q, k, v, bias):
        b, h, s, d = q.shape
        scores = (q.float() @ k.float().transpose(-2, -1)) * d ** -0.5 + bias.float()
        out = torch.empty(b, s, h, d, dtype=q.dtype).transpose(1, 2)  # the kernel's layout
        out.copy_(torch.softmax(scores, -1) @ v.float())
        ctx.save_for_backward(q, k, v, bias, out)  # and the log-sum-exp, left out (see the module docstring)
        return out

    @staticmethod
    def backward(ctx, grad):  # pragma: no cover - the test never runs backward
        raise NotImplementedError


def _efficient_sdpa(query, key, value, attn_mask=None, dropout_p=0.0, scale=None, is_causal=False, **_):
    b, h, s, _d = query.shape
    if attn_mask is None:  # no bias here: a causal mask stands in (the decoder's path always has a bias)
        attn_mask = torch.zeros(1, 1, s, key.shape[-2], dtype=query.dtype)
    mask = attn_mask
    if mask.shape[-1] % MASK_ALIGNMENT:  # attention.cpp pad_bias: pad, then slice back
        pad = MASK_ALIGNMENT - mask.shape[-1] % MASK_ALIGNMENT
        mask = torch.nn.functional.pad(mask, (0, pad))[..., :attn_mask.shape[-1]]
    return _Efficient.apply(query, key, value, mask.expand(b, h, s, key.shape[-2]))


def _saved(monkeypatch, encoder_layers: int, decoder_layers: int, source: int) -> int:
    transformers.logging.set_verbosity_error()
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", _efficient_sdpa)
    torch.manual_seed(0)
    config = transformers.T5Config(**SIZES, num_layers=encoder_layers, num_decoder_layers=decoder_layers,
                                   dropout_rate=0.0, attn_implementation="sdpa", decoder_start_token_id=0,
                                   pad_token_id=0)
    model = transformers.T5ForConditionalGeneration(config).to(torch.bfloat16)
    ids, labels = torch.randint(1, 64, (BATCH, source)), torch.randint(1, 64, (BATCH, TARGET))
    with saved_storages(parameter_storages(model)) as kept:
        model(input_ids=ids, labels=labels)
    return sum(kept.values())


def _predicted(encoder_layers: int, decoder_layers: int, source: int) -> int:
    arch = parse_config({"model_type": "t5", **SIZES, "num_layers": encoder_layers,
                         "num_decoder_layers": decoder_layers, "n_positions": source}, "tiny-t5")
    cfg = TrainingConfig(seq=TARGET, source_seq=source, kernels="eager", flash_attention=True)
    return activation_bytes(arch, cfg, BATCH, 0, 1)


@pytest.mark.parametrize("source", [12, 16])  # 12: the mask is padded to 16 per layer; 16: aligned
@pytest.mark.parametrize("side", ["encoder", "decoder"])
def test_a_t5_layer_under_sdpa_keeps_its_bias_copy(monkeypatch, side, source):
    more = (2, 1) if side == "encoder" else (1, 2)
    measured = _saved(monkeypatch, *more, source) - _saved(monkeypatch, 1, 1, source)
    predicted = _predicted(*more, source) - _predicted(1, 1, source)
    assert predicted == pytest.approx(measured, rel=0.01)
