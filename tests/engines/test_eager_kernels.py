"""The kernels eager transformers launches beyond the ledger's ops (engines/eager_kernels.py, data/engines/hf.yaml).

Expected counts are worked by hand from the modeling files named in data/engines/hf.yaml (transformers 5.24.0 Llama and
Mamba; benchmarks/count_hf_eager_kernels.py counts the same with a TorchDispatchMode): RMSNorm 6 kernels at fp32 and
8 with the half-precision casts, rotate_half over q and k 10, two cache cats, silu and mul, and a Mamba mixer whose
conv activation, softplus and gate run inside its two kernels while A = -exp(A_log) adds two."""

from pathlib import Path

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model
from sizeup.ingest.transformer_ops import Step, transformer_ledger
from sizeup.engines import resolve
from sizeup.engines.eager_kernels import eager_extra_kernels, eager_kernel_overhead, ssm_layer_host
from sizeup.engines.profile import engine_profile
from sizeup.workload.quantize import get_format

ROOT = Path(__file__).resolve().parents[2]


def _decode(path: str, weights: str):
    arch = load_model(str(ROOT / path))
    return arch, transformer_ledger(arch, Step(batch=1, new_tokens=1, context=500), weights=get_format(weights),
                                    kv_dtype="fp16", act_dtype="fp16", tp=1, per_layer=False)


def test_mamba_130m_fp32_launches_four_more_kernels_per_layer_and_five_more_at_the_final_norm():
    _, ledger = _decode("tests/ingest/configs/mamba-130m-hf.json", "fp32")
    # per layer: norm 6 - 1, scan 3 - 1, activation / softplus / gate 0 - 1 each: +4; the final norm +5
    assert eager_extra_kernels(engine_profile("hf"), ledger, fp32=True) == 24 * 4 + 5


def test_llama_2_7b_fp16_counts_norm_rotary_cache_and_mlp_kernels():
    _, ledger = _decode("src/sizeup/data/models/llama-2-7b.json", "fp16")
    # per layer: 2 norms x (8 - 1), rotary 10 - 1, cache write 2 - 1, act_mul 2 - 1; final norm 7; rotary tables 9
    assert eager_extra_kernels(engine_profile("hf"), ledger, fp32=False) == 32 * (14 + 9 + 1 + 1) + 7 + 9


def test_the_extra_kernels_cost_the_per_op_host_time_on_a_gpu_only_and_only_under_hf():
    _, ledger = _decode("src/sizeup/data/models/llama-2-7b.json", "fp16")
    catalog = load_catalog(include_user=False)
    hf = engine_profile("hf")
    got = eager_kernel_overhead(hf, ledger, catalog.device("a10"), fp32=False)
    assert got.typical == pytest.approx(816 * hf.range("decode_overhead_s").typical)
    assert eager_kernel_overhead(hf, ledger, catalog.device("epyc-9754"), fp32=False) is None
    assert eager_kernel_overhead(engine_profile("vllm"), ledger, catalog.device("a10"), fp32=False) is None
    # the execution model asks the same: hf says so in a sentence, vLLM launches what the ledger counts
    time, note = resolve("hf", catalog.device("a10")).extra_launches(ledger, fp32=False)
    assert time == got and "eager PyTorch" in note
    assert resolve("vllm", catalog.device("a10")).extra_launches(ledger, fp32=False) is None


def test_an_ssm_layer_pays_one_triton_launch_and_mamba_1_also_two_syncs():
    """transformers 4.44: MambaMixer and Mamba2Mixer call the Triton selective_state_update once per layer; only
    MambaMixer tests the CUDA tensor `cache_position[0] > 0` (twice: a comparison kernel and a blocking read each);
    Mamba2Mixer branches on the Python int seqlen_offset."""
    catalog = load_catalog(include_user=False)
    hf, gpu = engine_profile("hf", "4.44"), catalog.device("a100-80gb")
    launch, sync, per_op = (hf.range(k) for k in ("ssm_step_host_s", "host_sync_s", "decode_overhead_s"))
    mamba1 = load_model(str(ROOT / "tests/ingest/configs/mamba-130m-hf.json")).layers[0].ssm
    mamba2 = load_model(str(ROOT / "tests/ingest/configs/mamba-codestral-7b-v0.1.json")).layers[0].ssm
    assert (mamba1.version, mamba2.version) == (1, 2)
    got1, got2 = ssm_layer_host(hf, mamba1, gpu), ssm_layer_host(hf, mamba2, gpu)
    for attr in ("low", "typical", "high"):
        assert getattr(got2, attr) == pytest.approx(getattr(launch, attr))
        assert getattr(got1, attr) == pytest.approx(getattr(launch, attr) + 2 * (getattr(sync, attr) + getattr(per_op, attr)))
    assert got1.typical == pytest.approx(62e-6 + 2 * (30e-6 + 10e-6))  # triton PR #3503; sglang-omni #564; PR #50431
    # transformers 5.24 on tests a Python-side cache flag: the current release pays the launch, no sync
    current = engine_profile("hf")
    assert current.value("ssm_host_syncs.v1", -1) == 0
    assert ssm_layer_host(current, mamba1, gpu).typical == pytest.approx(launch.typical)


def test_no_ssm_host_term_on_a_cpu_or_for_an_engine_without_one():
    catalog = load_catalog(include_user=False)
    ssm = load_model(str(ROOT / "tests/ingest/configs/mamba-130m-hf.json")).layers[0].ssm
    assert ssm_layer_host(engine_profile("hf"), ssm, catalog.device("epyc-9754")) is None
    assert ssm_layer_host(engine_profile("vllm"), ssm, catalog.device("a100-80gb")) is None
