"""The naive state-space count checked against PyTorch itself: what autograd saves in one layer of
transformers' MambaForCausalLM / Mamba2ForCausalLM on their reference PyTorch scan (CPU, bf16, tiny configs).

Measured: the distinct non-parameter storages saved while the second of two layers runs forward (so the
embedding, the head and the loss are not in it). Predicted: the naive scan's count plus what the eager
RMSNorm keeps (sizeup.workload.training.activations.eager_activation_bytes). The Mamba-1 count names every
tensor; the Mamba-2 count is the dominant part only (its docstring), so its tolerance is wider."""

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from sizeup.ingest.families.registry import parse_config  # noqa: E402
from sizeup.workload.training import TrainingConfig  # noqa: E402
from sizeup.workload.training.activations import kept_layer_bytes  # noqa: E402
from tests.workload.saved_storage import parameter_storages, saved_storages  # noqa: E402

BATCH = 2
MAMBA = {"model_type": "mamba", "vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 2, "state_size": 4,
         "expand": 2, "conv_kernel": 4, "time_step_rank": 2}
MAMBA2 = {"model_type": "mamba2", "vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 2, "state_size": 4,
          "expand": 2, "conv_kernel": 4, "num_heads": 4, "head_dim": 8, "n_groups": 2, "chunk_size": 4}


def measured_layer_bytes(config: dict, seq: int) -> int:
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    if config["model_type"] == "mamba":
        model = transformers.MambaForCausalLM(transformers.MambaConfig(
            **{k: v for k, v in config.items() if k != "model_type"}, use_mambapy=False))
    else:
        model = transformers.Mamba2ForCausalLM(transformers.Mamba2Config(
            **{k: v for k, v in config.items() if k != "model_type"}))
    model = model.to(torch.bfloat16)
    params = parameter_storages(model)
    recording = [False]
    layer = model.backbone.layers[1]
    layer.register_forward_pre_hook(lambda *_: recording.__setitem__(0, True))
    layer.register_forward_hook(lambda *_: recording.__setitem__(0, False))
    ids = torch.randint(0, config["vocab_size"], (BATCH, seq))
    with saved_storages(params, keep=lambda t: recording[0]) as kept:
        model(input_ids=ids, labels=ids)
    return sum(kept.values())


def predicted_layer_bytes(config: dict, seq: int) -> int:
    arch = parse_config(config, config["model_type"])
    cfg = TrainingConfig(seq=seq, ssm_scan="naive", kernels="eager")
    return kept_layer_bytes(arch, arch.layers[1], cfg, BATCH, "none", 2)


@pytest.mark.parametrize("seq", [8, 16])
def test_mamba_naive_scan_count_matches_autograd_within_5_percent(seq):
    measured, predicted = measured_layer_bytes(MAMBA, seq), predicted_layer_bytes(MAMBA, seq)
    assert predicted == pytest.approx(measured, rel=0.05)


@pytest.mark.parametrize("seq", [8, 16])
def test_mamba2_naive_scan_count_is_the_dominant_part_within_15_percent(seq):
    measured, predicted = measured_layer_bytes(MAMBA2, seq), predicted_layer_bytes(MAMBA2, seq)
    assert 0.85 * measured <= predicted <= measured
