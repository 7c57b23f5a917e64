"""Training state-space models and encoder-decoders (issue 16): hand counts of what a layer keeps, Mamba's
activations linear in the length, a T5 fine-tune against its decoder alone, and the step's FLOPs against
6·params·tokens (PaLM appendix B) within the attention terms."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.families.registry import parse_config
from sizeup.ingest.transformer_ops import Step, transformer_ledger
from sizeup.ledger import OpKind
from sizeup.workload.finetune import FinetuneSpec, Method
from sizeup.workload.parallel import ParallelConfig
from sizeup.workload.training import TrainingConfig, estimate_training, training_memory
from sizeup.workload.training.activations import activation_bytes
from sizeup.workload.training.encoder_decoder import (encoder_decoder_flops_per_sequence, encoder_ledger,
                                                      relative_bias_bytes)
from sizeup.workload.training.ssm_activations import ssm_layer_activation_bytes

CATALOG = load_catalog(include_user=False)
H100 = CATALOG.device("h100")
CONFIGS = Path(__file__).parents[1] / "ingest" / "configs"
MAMBA = parse_config({"model_type": "mamba", "vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 2,
                      "state_size": 4, "expand": 2, "conv_kernel": 4, "time_step_rank": 2}, "tiny-mamba")
MAMBA2 = parse_config({"model_type": "mamba2", "vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 2,
                       "state_size": 4, "expand": 2, "conv_kernel": 4, "num_heads": 4, "head_dim": 8, "n_groups": 2,
                       "chunk_size": 4}, "tiny-mamba2")
T5 = parse_config({"model_type": "t5", "vocab_size": 64, "d_model": 16, "num_heads": 2, "d_kv": 8, "d_ff": 32,
                   "num_layers": 1, "num_decoder_layers": 1, "feed_forward_proj": "relu", "n_positions": 6}, "tiny-t5")


def _real(name: str):
    return parse_config(json.loads((CONFIGS / f"{name}.json").read_text()), name)


def _decoder_only(arch):
    """The same decoder without its encoder and cross-attention."""
    return replace(arch, cross_source=0, tower=None, extra_tensors=(), assumptions=())


# ---- hand counts ---------------------------------------------------------------------------------------
def test_mamba_fused_layer_keeps_what_mamba_inner_fn_saves():
    """h 16, inner D 32, state N 4, Δ rank r 2; batch 2 × 8 tokens = T 16; bf16 (2 bytes)."""
    t, h, d, n, r = 16, 16, 32, 4, 2
    hand = (2 * t * h      # the block norm's input
            + 2 * t * h    # in_proj's input (the norm's output)
            + 2 * t * 2 * d  # xz, the in_proj output
            + 2 * t * (r + 2 * n)  # x_dbl, the x_proj output
            + 2 * t * 2 * n  # contiguous B and C
            + 2 * t * d    # the scan output before the gate
            + 4 * 2 * d * 1 * 2 * n)  # fp32 chunk-end states: batch × D × 1 chunk of 2048 × 2N
    assert hand == 6720
    assert ssm_layer_activation_bytes(MAMBA, MAMBA.layers[0], 2, 8) == hand


def test_mamba2_fused_layer_keeps_what_the_combined_kernel_saves():
    """Mamba-2: in_proj output z, x, B, C, dt = D + (D + 2·G·N) + H = 32 + 48 + 4 = 84; out_x (D); fp32 rstd
    per norm group (G 2)."""
    t, h = 16, 16
    hand = 2 * t * h * 2 + 2 * t * 84 + 2 * t * 32 + 4 * t * 2
    assert ssm_layer_activation_bytes(MAMBA2, MAMBA2.layers[0], 2, 8) == hand == 4864


def test_mamba_recompute_policies():
    layer, t, h = MAMBA.layers[0], 16, 16
    none = ssm_layer_activation_bytes(MAMBA, layer, 2, 8)
    assert ssm_layer_activation_bytes(MAMBA, layer, 2, 8, recompute="full") == 2 * t * h
    assert ssm_layer_activation_bytes(MAMBA, layer, 2, 8, recompute="selective") == none  # no attention core
    assert ssm_layer_activation_bytes(MAMBA, layer, 2, 8, recompute="selective-op") == 2 * t * (h + 64)
    assert ssm_layer_activation_bytes(MAMBA, layer, 2, 8, scan="naive") > 4 * none  # T·D·N fp32 tensors


def test_t5_activations_add_the_encoder_layer_its_output_and_the_cross_attention():
    """Tiny T5 (h 16, 2 heads × d_kv 8, ReLU d_ff 32, 1 + 1 layers, no dropout); batch 2, target 4, source 6:
    target tokens T 8, source tokens S 12, bf16."""
    T, S, h, hd, ff = 8, 12, 16, 16, 32
    encoder_layer = (2 * S * h * 4  # two norm inputs, the qkv input, the MLP input
                     + 2 * S * hd * 4  # q, k, v, attention output
                     + 2 * S * ff)  # the ReLU's output (its backward reads no input), the down product's input
    encoder_output = 2 * S * h
    cross = 2 * T * h * 2 + 2 * (T * hd + S * 2 * hd + T * hd)  # norm and q inputs; q, k and v, output
    # the relative-position bias as SDPA's mask: a copy per layer, heads × q × k padded to 8 (encoder 6 × 8,
    # decoder 4 × 8, cross 4 × 8: a source of 6 is padded per layer), the causal `where`'s 1-byte condition,
    # and (full fine-tuning) each stack's int64 bucket indices
    indices = 8 * (4 * 4 + 6 * 6)
    bias = 2 * 2 * (6 * 8 + 4 * 8 + 4 * 8) + 4 * 4 + indices
    cfg = TrainingConfig(seq=4, source_seq=6)
    gap = activation_bytes(T5, cfg, 2, 0, 1) - activation_bytes(_decoder_only(T5), cfg, 2, 0, 1)
    assert gap == encoder_layer + encoder_output + cross + bias == 3840 + 384 + 1792 + 880
    # without a fused kernel the target × source scores are kept too (2 heads, bf16), and the encoder's s²; the
    # bias is added to the scores (nothing kept per layer), its bucket indices still are
    math = replace(cfg, flash_attention=False)
    gap_math = activation_bytes(T5, math, 2, 0, 1) - activation_bytes(_decoder_only(T5), math, 2, 0, 1)
    assert gap_math - gap == 2 * 4 * 6 * 2 * 2 + 2 * 6 * 6 * 2 * 2 - (bias - indices)


def _encoder_gap(spec: FinetuneSpec) -> int:
    """What the encoder side adds, the relative-position bias left out (counted above)."""
    cfg = TrainingConfig(seq=4, source_seq=6, finetune=spec)
    return activation_bytes(T5, cfg, 2, 0, 1) - activation_bytes(_decoder_only(T5), cfg, 2, 0, 1) - \
        relative_bias_bytes(T5, cfg)


def test_an_encoder_without_adapters_keeps_only_its_output():
    full = _encoder_gap(FinetuneSpec())
    # the encoder layer, and the cross-attention's q_proj input (frozen, no adapter: 2 · T · h)
    assert full - _encoder_gap(FinetuneSpec(method=Method.LORA, targets=("lm_head",))) == 3840 + 2 * 8 * 16


def test_an_adapter_on_q_proj_reaches_the_encoder_whose_frozen_mlp_keeps_no_input():
    """PEFT adapts every module named q_proj, the encoder's too: backward runs through the encoder layer, which
    keeps what the full count keeps less the MLP input (frozen up product: 2 · S · h; the ReLU keeps its output,
    the frozen down product's input, itself), plus the r-wide A outputs of the encoder's and the cross-attention's
    q adapters (2 · S · r, 2 · T · r; r 16)."""
    full = _encoder_gap(FinetuneSpec())
    lora = _encoder_gap(FinetuneSpec(method=Method.LORA, targets=("q_proj",)))
    assert full - lora == 2 * 12 * 16 - 2 * 12 * 16 - 2 * 8 * 16


# ---- scaling -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scan", ["fused", "naive"])
def test_mamba_activations_grow_linearly_with_the_length(scan):
    arch = _real("mamba-130m-hf")
    act = [training_memory(arch, H100, TrainingConfig(seq=s, ssm_scan=scan), 1).activations_bytes
           for s in (2048, 4096, 8192)]
    assert act[2] - act[1] == 2 * (act[1] - act[0]) > 0  # no s² term: the second difference is zero


def test_attention_without_a_fused_kernel_is_not_linear():
    """The control: the same check fails on a transformer that keeps its s² scores."""
    arch = _real("flan-t5-xl")
    act = [training_memory(_decoder_only(arch), H100, TrainingConfig(seq=s, flash_attention=False), 1)
           .activations_bytes for s in (256, 512, 1024)]
    assert act[2] - act[1] > 2 * (act[1] - act[0])


def test_t5_finetune_needs_more_memory_than_its_decoder_alone():
    arch = _real("flan-t5-xl")
    cfg = TrainingConfig(seq=512, micro_batch=4)
    t5, decoder = (estimate_training(a, H100, cfg) for a in (arch, _decoder_only(arch)))
    assert t5.memory.total_bytes > decoder.memory.total_bytes
    assert t5.memory.activations_bytes > 1.5 * decoder.memory.activations_bytes  # 24 encoder layers more
    assert t5.breakdown_s["forward"] > 1.5 * decoder.breakdown_s["forward"]  # the encoder runs too
    assert 0 < t5.mfu.typical < 1


def test_recompute_orders_an_encoder_decoders_memory():
    arch = _real("whisper-small")
    act = {r: training_memory(arch, H100, TrainingConfig(seq=448, recompute=r), 8).activations_bytes
           for r in ("none", "selective-op", "full")}
    assert act["full"] < act["selective-op"] < act["none"]


def test_pipeline_parallel_over_an_encoder_decoder_is_refused():
    cfg = TrainingConfig(seq=128, parallel=ParallelConfig(gpus=2, pp=2))
    with pytest.raises(ConfigError, match="--pp 2 over an encoder-decoder"):
        estimate_training(_real("flan-t5-xl"), H100, cfg)


# ---- FLOPs -------------------------------------------------------------------------------------------------
def _weight_and_all_flops(ledgers):
    attention = sum(o.matmul_flops * o.count for ledger in ledgers for o in ledger.ops if o.kind == OpKind.ATTENTION)
    weights = sum(ledger.totals().matmul_flops for ledger in ledgers) - attention
    return weights, sum(ledger.totals().flops for ledger in ledgers)


def test_mamba_training_flops_are_6_params_tokens():
    """No attention: forward + backward (3 × forward) of the weight products is 6·N·tokens (N without the
    embedding lookup; the tied head is a product), and the scan, conv and norms add ~3%."""
    arch, batch, seq = _real("mamba-130m-hf"), 4, 2048
    ledger = transformer_ledger(arch, Step(batch=batch, new_tokens=seq, context=seq, logits="all"), per_layer=False)
    weights, total = _weight_and_all_flops([ledger])
    six_n_t = 6 * arch.params * batch * seq
    assert 3 * weights == pytest.approx(six_n_t, rel=0.01)
    assert 3 * total == pytest.approx(six_n_t, rel=0.05)


def test_t5_training_flops_are_6_params_tokens_within_the_attention_terms():
    """The decoder ledger plus the encoder's (what step_time prices): weight products 6·N·tokens with each
    weight over its own side's tokens; the whole within PaLM's 12·L·H·Q·T attention terms (the ledger
    counts the causal triangle of the decoder's self-attention, PaLM the full square)."""
    arch, batch, target, source = _real("flan-t5-xl"), 2, 512, 512
    cfg = TrainingConfig(seq=target, source_seq=source)
    decoder = transformer_ledger(arch, Step(batch=batch, new_tokens=target, context=target, logits="all"),
                                 per_layer=False)
    weights, total = _weight_and_all_flops([decoder, encoder_ledger(arch, cfg, batch, weights="bf16",
                                                                    act_dtype="bf16")])
    lookups = sum(t.numel for t in arch.tensors() if t.role in ("embedding", "position"))
    head = arch.vocab * arch.hidden if arch.tie_embeddings else 0  # a tied head is a product on the shared table
    six_n_t = 6 * (arch.params - lookups + head) * batch * target
    assert 3 * weights == pytest.approx(six_n_t, rel=0.01)
    model = encoder_decoder_flops_per_sequence(arch, target, source, 6) * batch
    attention_terms = model - six_n_t
    assert 0 < attention_terms < 0.1 * six_n_t
    assert abs(3 * total - six_n_t) <= attention_terms


def test_the_report_names_the_source_length_and_the_scan():
    t5 = estimate_training(_real("flan-t5-xl"), H100, TrainingConfig(seq=128, source_seq=256, micro_batch=1))
    mamba = estimate_training(_real("mamba-130m-hf"), H100, TrainingConfig(seq=128, ssm_scan="naive", micro_batch=1))
    assert t5.to_dict()["config"]["source_seq"] == 256 and t5.to_dict()["config"]["ssm_scan"] is None
    assert mamba.to_dict()["config"]["ssm_scan"] == "naive" and mamba.to_dict()["config"]["source_seq"] is None
    assert any("source 256 positions" in a for a in t5.assumptions)
    assert any("naive scan" in a for a in mamba.assumptions)


def test_bad_scan_and_source_length_are_one_line_errors():
    with pytest.raises(ConfigError, match="--ssm-scan 'slow'"):
        TrainingConfig(ssm_scan="slow")
    with pytest.raises(ConfigError, match="--source-seq 0"):
        TrainingConfig(source_seq=0)


def test_the_cli_takes_source_seq_and_ssm_scan():
    import subprocess
    import sys

    def run(*args):
        return subprocess.run([sys.executable, "-m", "sizeup", "train", *args, "--device", "h100", "--seq", "128",
                               "--micro-batch", "1", "--json"], capture_output=True, text=True)

    t5 = run(str(CONFIGS / "flan-t5-xl.json"), "--source-seq", "256")
    assert t5.returncode == 0 and json.loads(t5.stdout)["config"]["source_seq"] == 256
    bad = run(str(CONFIGS / "mamba-130m-hf.json"), "--ssm-scan", "slow")
    assert bad.returncode != 0 and "--ssm-scan" in bad.stderr and "Traceback" not in bad.stderr
