"""Training memory and time: the reference write-ups' worked examples, Korthikanti's activation formula,
sharding invariants."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model, parse_config
from sizeup.workload.finetune import FinetuneSpec, Method, lora_params, trainable_parameters
from sizeup.workload.parallel import ParallelConfig
from sizeup.workload.training import TrainingConfig, estimate_training, layer_activation_bytes, training_memory

CATALOG = load_catalog(include_user=False)
LLAMA2 = load_model("llama-2-7b")


def test_lora_gradient_worked_example():
    """Reference write-up: one 4096×11008 fp16 weight has 4096·11008·2 = 90,177,536 bytes of gradient;
    rank-8 LoRA adapters for it have A [8 × 4096] + B [11008 × 8] = 8·(4096 + 11008) = 120,832 parameters,
    whose fp16 gradients take 120,832 · 2 = 241,664 bytes (0.23 MiB — not the write-up's 0.6 MB)."""
    assert 4096 * 11008 * 2 == 90_177_536
    assert lora_params((11008, 4096), 8) == 120_832
    assert lora_params((11008, 4096), 8) * 2 == 241_664


def test_lora_trainable_parameters_on_llama_2_7b():
    spec = FinetuneSpec(method=Method.LORA, rank=8, targets=("q_proj", "v_proj"))
    # 32 layers × 2 targets × 8 · (4096 + 4096)
    assert trainable_parameters(LLAMA2, spec).trainable_params == 32 * 2 * 8 * 8192 == 4_194_304


def test_adamw_mixed_precision_is_16_bytes_per_parameter():
    """2 (bf16 weights) + 2 (bf16 gradients) + 4 (fp32 master) + 4 + 4 (fp32 moments) = 16 bytes: a 7B full
    fine-tune needs ~112 GB of model states before activations (the '×12' shortcut counts only K = 12)."""
    cfg = TrainingConfig(seq=128, micro_batch=1)
    m = training_memory(LLAMA2, CATALOG.device("h100"), cfg, 1)
    states = m.weights_bytes + m.gradients_bytes + m.optimizer_bytes
    assert states == pytest.approx(16 * LLAMA2.params, rel=1e-6)
    assert 16 * 7e9 == 112e9
    e = estimate_training(LLAMA2, CATALOG.device("h100"), cfg)
    assert any("K=12" in a for a in e.assumptions)


def gpt3_layer(dropout=0.1):
    # GPT-3 175B: h = 12288, a = 96, MLP 4h
    return parse_config({"model_type": "gpt2", "n_embd": 12288, "n_layer": 1, "n_head": 96, "n_positions": 2048,
                         "vocab_size": 50257, "attn_pdrop": dropout, "resid_pdrop": dropout})


@pytest.mark.parametrize("b, s", [(1, 2048), (4, 1024)])
def test_korthikanti_activation_formula(b, s):
    """Korthikanti et al. 2022, eq. (1)-(4): per layer, bytes = s·b·h·(34 + 5·a·s/h) without recomputation;
    with tensor parallel t: s·b·h·(10 + 24/t + 5·a·s/(h·t)); with sequence parallel: s·b·h/t·(34 + 5·a·s/h);
    selective recomputation: 34·s·b·h/t; full recomputation: 2·s·b·h."""
    arch = gpt3_layer()
    layer, h, a = arch.layers[0], 12288, 96
    sbh = s * b * h
    assert layer_activation_bytes(arch, layer, b, s, flash=False) == sbh * 34 + 5 * a * s * s * b
    assert layer_activation_bytes(arch, layer, b, s, tp=8, flash=False) == sbh * 10 + (sbh * 24 + 5 * a * s * s * b) // 8
    assert layer_activation_bytes(arch, layer, b, s, tp=8, sequence_parallel=True, flash=False) == \
        (sbh * 34 + 5 * a * s * s * b) // 8
    assert layer_activation_bytes(arch, layer, b, s, tp=8, sequence_parallel=True, recompute="selective",
                                  flash=False) == 34 * sbh // 8
    assert layer_activation_bytes(arch, layer, b, s, recompute="full") == 2 * sbh


def test_flash_attention_drops_the_score_terms():
    arch = gpt3_layer()
    assert layer_activation_bytes(arch, arch.layers[0], 1, 2048, flash=True) == 34 * 2048 * 12288


def test_zero3_shards_add_up_to_the_unsharded_states():
    device = CATALOG.device("a100-80g")
    whole = training_memory(LLAMA2, device, TrainingConfig(seq=512), 1)
    for stage, dp in ((1, 8), (2, 4), (3, 8)):
        cfg = TrainingConfig(seq=512, parallel=ParallelConfig(gpus=dp, zero=stage))
        shard = training_memory(LLAMA2, device, cfg, 1)
        assert shard.optimizer_bytes * dp == pytest.approx(whole.optimizer_bytes, rel=1e-6)
        grads = shard.gradients_bytes * (dp if stage >= 2 else 1)
        weights = shard.weights_bytes * (dp if stage >= 3 else 1)
        assert grads == pytest.approx(whole.gradients_bytes, rel=1e-6)
        assert weights == pytest.approx(whole.weights_bytes, rel=1e-6)


def test_tensor_parallel_2_halves_the_sharded_weights():
    device = CATALOG.device("h100")
    one = training_memory(LLAMA2, device, TrainingConfig(seq=512), 1)
    two = training_memory(LLAMA2, device, TrainingConfig(seq=512, parallel=ParallelConfig(gpus=2, tp=2)), 1)
    assert two.weights_bytes * 2 == pytest.approx(one.weights_bytes, rel=1e-6)


@settings(max_examples=20, deadline=None)
@given(mb=st.integers(1, 16), seq=st.sampled_from([256, 512, 1024, 2048, 4096]),
       method=st.sampled_from(["full", "lora", "qlora"]), recompute=st.sampled_from(["none", "selective", "full"]))
def test_memory_grows_with_micro_batch_and_sequence(mb, seq, method, recompute):
    device = CATALOG.device("h100")
    cfg = TrainingConfig(seq=seq, recompute=recompute, finetune=FinetuneSpec(method=method))
    base = training_memory(LLAMA2, device, cfg, mb).total_bytes
    assert training_memory(LLAMA2, device, cfg, mb + 1).total_bytes > base
    longer = TrainingConfig(seq=seq * 2, recompute=recompute, finetune=FinetuneSpec(method=method))
    assert training_memory(LLAMA2, device, longer, mb).total_bytes > base


def test_qlora_uses_far_less_weight_memory_than_lora():
    device = CATALOG.device("4090")
    lora = training_memory(LLAMA2, device, TrainingConfig(finetune=FinetuneSpec(method="lora")), 1)
    qlora = training_memory(LLAMA2, device, TrainingConfig(finetune=FinetuneSpec(method="qlora")), 1)
    assert qlora.weights_bytes < lora.weights_bytes / 3


def test_step_time_mfu_and_cost():
    cfg = TrainingConfig(seq=4096, parallel=ParallelConfig(gpus=8, zero=3), micro_batch=1, global_batch=64,
                         tokens=10**9)
    e = estimate_training(LLAMA2, CATALOG.device("h100"), cfg, CATALOG.offers_for())
    assert e.grad_accumulation == 8 and e.global_batch == 64
    assert 0 < e.mfu.low <= e.mfu.typical <= e.mfu.high < 1
    assert e.time_to_train_s.typical == pytest.approx(e.step_s.typical * -(-10**9 // (64 * 4096)), rel=1e-9)
    assert e.cost_usd["on_demand"].typical > 0 and e.offer.gpu == "h100-sxm-80gb"


def test_pipeline_bubble_shrinks_with_more_micro_batches():
    base = dict(seq=2048, micro_batch=1, parallel=ParallelConfig(gpus=4, pp=4))
    few = estimate_training(LLAMA2, CATALOG.device("h100"), TrainingConfig(global_batch=4, **base))
    many = estimate_training(LLAMA2, CATALOG.device("h100"), TrainingConfig(global_batch=64, **base))
    assert few.breakdown_s["pipeline_bubble"] / few.step_s.typical > many.breakdown_s["pipeline_bubble"] / many.step_s.typical


@pytest.mark.parametrize("make, message", [
    (lambda: FinetuneSpec(method="lora", rank=0), "--rank 0: a LoRA rank must be a positive integer"),
    (lambda: trainable_parameters(LLAMA2, FinetuneSpec(method="lora", targets=("qkv",))),
     "--targets 'qkv' matches no module of llama-2-7b: modules are down_proj, gate_proj, k_proj, o_proj, q_proj"),
    (lambda: estimate_training(LLAMA2, CATALOG.device("h100"), TrainingConfig(parallel=ParallelConfig(gpus=3, tp=3))),
     "--tp 3 does not divide the 32 attention heads"),
    (lambda: ParallelConfig(gpus=8, tp=3), "not divisible by tp × pp"),
    (lambda: TrainingConfig(optimizer="rmsprop"), "--optimizer 'rmsprop'"),
])
def test_bad_training_input(make, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("×", ".")):
        make()


LLAMA31 = load_model("llama-3.1-8b")


def test_selective_op_keeps_the_input_the_attention_output_and_every_other_product():
    """torchtitan's per-op policy on a Llama-3.1-8B layer: products in call order are q, k, v, o, gate,
    up, down; the 1st, 3rd, 5th and 7th outputs (q, v, gate, down) are kept, with the layer input and the
    attention output (plus its fp32 log-sum-exp)."""
    s, b, h, heads = 4096, 2, 4096, 32
    layer = LLAMA31.layers[0]
    kept = 2 * s * b * h + 2 * s * b * h + 4 * s * b * heads + 2 * s * b * (4096 + 1024 + 14336 + 4096)
    assert layer_activation_bytes(LLAMA31, layer, b, s, recompute="selective-op") == kept
    full = layer_activation_bytes(LLAMA31, layer, b, s, recompute="full")
    none = layer_activation_bytes(LLAMA31, layer, b, s, recompute="none")
    assert full < kept < none


def test_selective_op_reruns_part_of_the_forward_pass():
    def recompute(policy):
        cfg = TrainingConfig(seq=4096, micro_batch=1, recompute=policy, parallel=ParallelConfig(gpus=8, zero=3))
        e = estimate_training(LLAMA31, CATALOG.device("a100-sxm-80gb"), cfg)
        return e.breakdown_s["recompute"], e.breakdown_s["forward"], e.hfu.typical / e.mfu.typical

    op, forward, op_hfu = recompute("selective-op")
    full, _, full_hfu = recompute("full")
    assert 0 < op < full == pytest.approx(forward)
    assert 1 < op_hfu < full_hfu


def test_flash_attention_backward_recomputes_the_scores():
    """FlashAttention's backward runs 5 matrix products against the forward's 2 (2.5×); with stored
    scores every op's backward is 2× its forward."""
    def ratio(**kw):
        cfg = TrainingConfig(seq=8192, micro_batch=1, **kw)
        e = estimate_training(LLAMA31, CATALOG.device("h100"), cfg)
        return e.breakdown_s["backward"] / e.breakdown_s["forward"]

    assert ratio(flash_attention=False) == pytest.approx(2.0, rel=1e-9)
    assert 2.0 < ratio() < 2.5
    lora = ratio(finetune=FinetuneSpec(method="lora"))
    assert 1.0 < lora < 2.0  # frozen weights get no weight gradient, attention still backpropagates


def test_chunked_loss_keeps_one_fp32_chunk():
    """bf16 logits (2 bytes) stay; the fp32 upcast and log-softmax (4 + 4 bytes) exist one chunk at a time."""
    device = CATALOG.device("h100")
    mb, seq = 2, 2048
    one = training_memory(LLAMA31, device, TrainingConfig(seq=seq), mb).activations_bytes
    eight = training_memory(LLAMA31, device, TrainingConfig(seq=seq, loss_chunks=8), mb).activations_bytes
    assert one - eight == mb * seq * LLAMA31.vocab * (8 - 1)


def test_interleaved_pipeline_divides_the_bubble():
    def bubble(vp):
        cfg = TrainingConfig(seq=2048, micro_batch=1, global_batch=16, parallel=ParallelConfig(gpus=4, pp=4, vp=vp))
        e = estimate_training(LLAMA2, CATALOG.device("h100"), cfg)
        return e.breakdown_s["pipeline_bubble"]

    assert bubble(1) == pytest.approx(2 * bubble(2), rel=1e-9)


def test_overlapped_tensor_parallel_traffic_is_hidden_behind_the_products():
    def tp_time(overlap):
        cfg = TrainingConfig(seq=4096, micro_batch=1, parallel=ParallelConfig(gpus=8, tp=8, tp_overlap=overlap))
        return estimate_training(load_model("llama-3.1-70b"), CATALOG.device("h100"), cfg).breakdown_s["tensor_parallel"]

    assert tp_time(False) > 0 and tp_time(True) < tp_time(False)


def test_fp8_products_run_at_their_own_efficiency_and_pay_for_quantization():
    from sizeup.price.efficiency import default_efficiency, tensor_fraction

    eff = default_efficiency("gpu")
    assert tensor_fraction(eff, "matmul", "fp8") is eff.tensor["matmul@fp8"]
    assert tensor_fraction(eff, "matmul", "bf16") is eff.tensor["matmul"]
    assert eff.tensor["matmul@fp8"].typical < eff.tensor["matmul"].typical
    cfg = dict(seq=4096, micro_batch=1, parallel=ParallelConfig(gpus=8, zero=1))
    bf16 = estimate_training(LLAMA2, CATALOG.device("h100"), TrainingConfig(**cfg))
    fp8 = estimate_training(LLAMA2, CATALOG.device("h100"), TrainingConfig(precision="fp8", **cfg))
    assert fp8.step_s.typical < bf16.step_s.typical  # faster, but far from the 2× the peaks suggest
    assert bf16.step_s.typical / fp8.step_s.typical < 1.5
    assert any("quantization" in a for a in fp8.assumptions)


@pytest.mark.parametrize("make, message", [
    (lambda: ParallelConfig(gpus=4, vp=2).check_model(32, 8, 32, 0), "--vp 2: needs --pp > 1"),
    (lambda: ParallelConfig(gpus=4, pp=4, vp=3).check_model(32, 8, 32, 0), "pp × vp dividing the 32 layers"),
    (lambda: TrainingConfig(loss_chunks=0), "--loss-chunks 0: expected a positive integer"),
    (lambda: TrainingConfig(recompute="some"), "--recompute 'some': expected one of none, selective, selective-op"),
])
def test_bad_parallel_and_recompute_input(make, message):
    with pytest.raises(ConfigError, match=message.replace("×", ".")):
        make()


def test_adapters_keep_only_the_inputs_their_backward_reads():
    """Frozen native weights need no input for a weight gradient: under LoRA on q, v the MLP input (h) and
    the MLP product (intermediate) are not kept; bitsandbytes' 4-bit product keeps every input (QLoRA).
    With dropout each adapter keeps its dropped input (2 bytes) and mask (1 byte); litgpt's fused q/k/v
    adapter keeps one, and the attention input itself is then kept by nobody."""
    device, mb, seq = CATALOG.device("a10g"), 2, 512
    tokens, h, inter, layers = mb * seq, LLAMA2.hidden, LLAMA2.layers[0].mlp.intermediate, LLAMA2.num_layers

    def act(method, **spec):
        cfg = TrainingConfig(seq=seq, finetune=FinetuneSpec(method=method, rank=32, **spec))
        return training_memory(LLAMA2, device, cfg, mb).activations_bytes

    assert act("qlora") - act("lora") == layers * 2 * tokens * (h + inter)
    assert act("qlora") - act("full") == layers * 2 * 2 * tokens * 32  # q's and v's r-wide A outputs
    fused = act("lora", dropout=0.05, fused_qkv=True) - act("lora")
    assert fused == layers * (3 * tokens * h - 2 * tokens * h - 2 * tokens * 32)  # one A output, not q's and v's
    per_module = act("lora", dropout=0.05) - act("lora")
    assert per_module == layers * (2 * 3 * tokens * h - 2 * tokens * h)  # q and v each drop their own copy


def test_lora_dropout_must_be_a_probability():
    with pytest.raises(ConfigError, match="--lora-dropout 1.0: expected a probability in"):
        FinetuneSpec(method="lora", dropout=1.0)


@settings(max_examples=40, deadline=None)
@given(mb=st.integers(1, 8), seq=st.sampled_from([256, 1024, 4096]), tp=st.sampled_from([1, 2, 4]),
       targets=st.sampled_from([("q_proj", "v_proj"), ("all-linear",), ("down_proj",), ("gate_proj", "o_proj")]),
       dropout=st.sampled_from([0.0, 0.1]))
def test_adapter_activations_stay_between_nothing_and_full_training(mb, seq, tp, targets, dropout):
    device = CATALOG.device("h100")
    par = ParallelConfig(gpus=tp, tp=tp)

    def act(method, p=0.0):
        cfg = TrainingConfig(seq=seq, parallel=par, finetune=FinetuneSpec(method=method, targets=targets, dropout=p))
        return training_memory(LLAMA2, device, cfg, mb).activations_bytes

    full = act("full")
    # QLoRA keeps every input, as full training does, and each adapter's r-wide A output (B's input)
    modules = 7 if targets == ("all-linear",) else len(targets)
    assert 0 < act("lora") <= act("qlora") == full + LLAMA2.num_layers * 2 * mb * seq * 16 * modules
    assert act("lora", dropout) >= act("lora")  # a dropped copy (3 bytes) replaces at most a 2-byte input


@pytest.mark.parametrize("ep", [1, 2, 8])
def test_zero_shards_experts_only_across_ranks_holding_the_same_experts(ep):
    """8 GPUs, expert parallel ep: a GPU holds 1/ep of the routed experts, and ZeRO-1 shards their
    optimizer state over the dp/ep ranks with the same experts; dense tensors over all 8."""
    arch = load_model("mixtral-8x7b")
    expert = sum(t.numel for t in arch.tensors() if t.role == "expert")
    dense = arch.params - expert
    cfg = TrainingConfig(seq=1024, parallel=ParallelConfig(gpus=8, ep=ep, zero=1))
    memory = training_memory(arch, CATALOG.device("h100"), cfg, 1)
    assert memory.optimizer_bytes == pytest.approx(12 * (dense / 8 + expert / (ep * (8 // ep))), rel=1e-9)
    assert memory.weights_bytes == pytest.approx(2 * (dense + expert / ep), rel=1e-9)
