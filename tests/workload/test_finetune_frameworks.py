"""Fine-tuning as people run it: framework profiles (HF Trainer / TRL / PEFT, LLaMA-Factory, Unsloth, Axolotl) change
memory and speed, the loss path, dataset-shaped lengths, ZeRO/FSDP collectives per phase, the allocator reserve."""

from dataclasses import replace

import pytest

from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model
from sizeup.workload.finetune import FinetuneSpec
from sizeup.workload.frameworks import resolve_settings
from sizeup.workload.parallel import ParallelConfig
from sizeup.workload.training import TrainingConfig, estimate_training, training_memory, with_settings
from sizeup.workload.training.allocator import reserve_range, reserve_sources
from sizeup.workload.training.batches import sequence_lengths
from sizeup.workload.training.loss import UPCAST_PEAK_BYTES, loss_peak_bytes

CATALOG = load_catalog(include_user=False)
A100 = CATALOG.device("a100-sxm-80gb")
RTX4090 = CATALOG.device("rtx-4090")
LLAMA3 = load_model("llama-3-8b")
LORA = FinetuneSpec(method="lora", rank=16, targets=("q_proj", "k_proj", "v_proj", "o_proj"))


def config(framework=None, seq=2048, micro=1, **given):
    run = {k: given.pop(k) for k in ("finetune", "parallel", "precision", "mean_seq", "padded_seq", "global_batch")
           if k in given}
    cfg = TrainingConfig(finetune=run.pop("finetune", LORA), seq=seq, micro_batch=micro, **run)
    return with_settings(cfg, resolve_settings(framework, seq, **given), framework)


def test_transformers_upcast_loss_keeps_12_bytes_per_logit():
    """logits.float(), then cross_entropy: at the start of backward the fp32 log-softmax, nll_loss's gradient and
    log_softmax's input gradient coexist (transformers loss_utils.ForCausalLMLoss)."""
    cfg = config("hf", loss="upcast")
    assert loss_peak_bytes(LLAMA3, cfg, 1) == 2048 * LLAMA3.vocab * UPCAST_PEAK_BYTES == 2048 * 128256 * 12


def test_fused_linear_and_chunked_losses_keep_less_than_the_upcast_one():
    peaks = {kind: loss_peak_bytes(LLAMA3, config("hf", loss=kind), 4) for kind in
             ("upcast", "inplace", "chunked", "fused-linear")}
    assert peaks["fused-linear"] < peaks["inplace"] < peaks["chunked"] < peaks["upcast"]
    assert peaks["fused-linear"] < peaks["upcast"] / 10  # Liger never materialises the 128k-vocabulary logits


def test_framework_changes_speed_as_well_as_memory():
    runs = {fw: estimate_training(LLAMA3, A100, config(fw)) for fw in ("hf", "unsloth", "megatron")}
    steps = {fw: e.step_s.typical for fw, e in runs.items()}
    memory = {fw: e.memory.total_bytes for fw, e in runs.items()}
    assert steps["hf"] > steps["megatron"]  # eager multi-kernel norms, PEFT adapter kernels, the upcast loss
    assert runs["hf"].breakdown_s["framework_kernels"] > 3 * runs["megatron"].breakdown_s["framework_kernels"]
    assert memory["unsloth"] < memory["hf"]  # offloaded checkpointing and the fused loss
    assert len(set(steps.values())) == 3


def test_geforce_lora_mfu_is_no_longer_priced_near_the_peak():
    """Issue 29: LoRA of Llama-3-8B on an RTX 4090 was priced at 89.7% MFU; eager kernels, PEFT's adapter kernels
    and the loss's passes are memory traffic the fused ledger left out."""
    e = estimate_training(LLAMA3, RTX4090, config("hf"))
    assert e.mfu.typical < 0.75 and e.breakdown_s["framework_kernels"] > 0.1 * e.step_s.typical


def test_zero3_all_gathers_make_it_slower_than_zero2_on_a_slow_link():
    """Two RTX 4090s on PCIe: ZeRO-3 gathers the whole model for the forward and again for the backward of every
    micro-step; ZeRO-2 moves only the gradients and one gather of the (LoRA: tiny) trainable weights."""
    def step(zero, tp=1):
        par = ParallelConfig(gpus=2, zero=zero, tp=tp)
        e = estimate_training(LLAMA3, RTX4090, config("hf", parallel=par, precision="bf16"))
        return e.step_s.typical, e.breakdown_s
    zero2, zero3, tp2 = step(2), step(3), step(0, tp=2)
    assert zero3[0] > zero2[0] and zero3[1]["data_parallel_exposed"] > zero2[1]["data_parallel_exposed"] > 0
    assert zero3[0] > tp2[0]  # ZeRO-3's gathers no longer make it look faster than tensor parallelism here


def test_zero3_exposes_at_least_the_first_gather_even_on_nvlink():
    par = ParallelConfig(gpus=8, zero=3)
    e = estimate_training(LLAMA3, CATALOG.device("h100-sxm-80gb"), config("hf", parallel=par, finetune=FinetuneSpec()))
    assert e.breakdown_s["data_parallel_exposed"] > 0
    assert any("ZeRO-3 / FSDP" in a for a in e.assumptions)


def test_mean_seq_prices_time_at_the_processed_length_and_memory_at_the_longest():
    full = estimate_training(LLAMA3, A100, config("hf", seq=4096, micro=4))
    padded = estimate_training(LLAMA3, A100, config("hf", seq=4096, micro=4, mean_seq=1024))
    packed = estimate_training(LLAMA3, A100, config("hf", seq=4096, micro=4, mean_seq=1024, packing=True))
    assert padded.memory.allocated_bytes == full.memory.allocated_bytes == packed.memory.allocated_bytes
    # batches whose shape varies step to step fragment the allocator more (data/training/allocator_reserve.yaml)
    assert padded.memory.total_bytes > full.memory.total_bytes == packed.memory.total_bytes
    assert padded.step_s.typical < full.step_s.typical == pytest.approx(packed.step_s.typical)
    # padding wastes positions: real tokens/s below the positions computed per second; packing wastes none
    assert padded.tokens_per_s.typical < padded.processed_tokens_per_s.typical
    assert packed.tokens_per_s.typical == pytest.approx(packed.processed_tokens_per_s.typical)
    assert any("padding to the longest" in a for a in padded.assumptions)


def test_padded_length_expectation_and_its_bounds():
    one = sequence_lengths(4096, 1, mean_seq=1000, packing=False, padded_seq=None)
    eight = sequence_lengths(4096, 8, mean_seq=1000, packing=False, padded_seq=None)
    assert one.processed == 1000 and 1000 < eight.processed < 1999 and eight.real == 1000
    assert sequence_lengths(4096, 8, mean_seq=1000, packing=False, padded_seq=1500).processed == 1500
    with pytest.raises(ConfigError, match="--mean-seq 5000: expected a length from 1 to --seq 4,096"):
        sequence_lengths(4096, 8, mean_seq=5000, packing=False, padded_seq=None)


def test_peft_kbit_upcast_costs_memory_and_sharded_qlora_skips_it():
    qlora = FinetuneSpec(method="qlora", rank=16, targets=("q_proj", "v_proj"))
    hf = training_memory(LLAMA3, A100, config("hf", finetune=qlora, recompute="full"), 4)
    axolotl = training_memory(LLAMA3, A100, config("axolotl", finetune=qlora, recompute="full"), 4)
    assert hf.weights_bytes > axolotl.weights_bytes and hf.activations_bytes > axolotl.activations_bytes
    sharded = ParallelConfig(gpus=2, zero=3)
    hf2 = config("hf", finetune=qlora, recompute="full", parallel=sharded)
    ax2 = config("axolotl", finetune=qlora, recompute="full", parallel=sharded)
    assert training_memory(LLAMA3, A100, hf2, 4).activations_bytes == training_memory(LLAMA3, A100, ax2, 4).activations_bytes


def test_gradients_freed_between_steps_do_not_add_to_the_activation_peak():
    full = FinetuneSpec()
    freed = training_memory(LLAMA3, A100, config("hf", finetune=full, precision="bf16"), 1)
    kept = training_memory(LLAMA3, A100, config("hf", finetune=full, precision="bf16", grads_freed=False), 1)
    accumulated = training_memory(LLAMA3, A100, config("hf", finetune=full, precision="bf16"), 1, 4)
    assert not freed.gradients_coexist and kept.gradients_coexist and accumulated.gradients_coexist
    assert freed.total_bytes < kept.total_bytes
    assert freed.total_bytes == freed.weights_bytes + freed.optimizer_bytes + freed.overhead_bytes + max(
        freed.activations_bytes, freed.gradients_bytes + freed.step_temp_bytes)


def test_allocator_reserve_by_regime_and_leave_one_source_out():
    single, sharded = reserve_range("single"), reserve_range("sharded")
    assert 0 < single.low <= single.typical <= single.high and sharded.typical > single.typical
    assert "fms-acceleration" in reserve_sources()
    assert reserve_range("single", exclude="fms-acceleration") != single
    e = training_memory(LLAMA3, A100, config("hf"), 1)
    assert e.total_range.low < e.total_bytes < e.total_range.high
    assert e.process_range.typical > e.total_bytes  # nvidia-smi also counts the CUDA context
    assert e.allocated_bytes < e.total_bytes


def test_accelerate_fsdp_upcasts_the_sharded_lora_base_to_fp32():
    par = ParallelConfig(gpus=2, zero=3)
    mixed = training_memory(LLAMA3, A100, config("hf", parallel=par, precision="bf16-mixed"), 1)
    pure = training_memory(LLAMA3, A100, config("hf", parallel=par, precision="bf16"), 1)
    assert mixed.weights_bytes == pytest.approx(2 * pure.weights_bytes, rel=0.01)


@pytest.mark.parametrize("framework, recompute, optimizer", [
    ("llama-factory", "full", "adamw"), ("unsloth", "offload", "adamw-8bit"), ("hf", "none", "adamw")])
def test_framework_defaults_and_given_options_win(framework, recompute, optimizer):
    cfg = config(framework)
    assert (cfg.recompute, cfg.optimizer) == (recompute, optimizer)
    assert config(framework, recompute="selective", optimizer="sgd").recompute == "selective"


def test_offloaded_checkpointing_keeps_two_layer_inputs_on_the_gpu():
    offload = training_memory(LLAMA3, A100, config("unsloth"), 8)
    full = training_memory(LLAMA3, A100, config("unsloth", recompute="full"), 8)
    assert offload.activations_bytes < full.activations_bytes
    assert replace(config("unsloth"), recompute="offload").recompute == "offload"
