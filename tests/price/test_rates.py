"""The scalar pricing path (price.rates.price_totals, no numpy) against the vectorised roofline."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model
from sizeup.ingest.transformer_ops import Step, transformer_ledger
from sizeup.price.efficiency import device_efficiency
from sizeup.price.rates import price_totals
from sizeup.price.roofline import price

CATALOG = load_catalog(include_user=False)
# a GPU with published peaks, one with derived peaks, a CPU (dispatch adds to op time), an Apple SoC,
# a device whose compute is unknown, and a datacenter part with FP8
DEVICES = ["rtx-4090", "rtx-3080-ti", "xeon-8480-2s", "apple-m3-max", "core-i9-13900k", "h100-sxm-80gb"]
CASES = [("llama-3.1-8b", "bf16", Step(batch=1, new_tokens=512, context=512)),
         ("llama-3.1-8b", "q4_k_m", Step(batch=1, new_tokens=1, context=640)),
         ("qwen3-30b-a3b", "fp8", Step(batch=8, new_tokens=1, context=4096)),
         ("bert-base-uncased", "fp16", Step(batch=4, new_tokens=128, context=128)),
         ("gpt-oss-20b", "bf16", Step(batch=2, new_tokens=1024, context=1024))]


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300)


@pytest.mark.parametrize("device_id", DEVICES)
@pytest.mark.parametrize("model,weights,step", CASES, ids=[f"{m}-{w}-{s.batch}" for m, w, s in CASES])
def test_the_scalar_totals_equal_the_vectorised_roofline(device_id, model, weights, step):
    device = CATALOG.devices[device_id]
    ledger = transformer_ledger(load_model(model), step, weights=weights)
    eff = device_efficiency(device)
    roof, totals = price(ledger, device, eff), price_totals(ledger, device, eff)
    for level in ("low", "typical", "high"):
        assert _close(getattr(totals.total_s, level), getattr(roof.total_s, level))
    vectorised = {b: sum(v["time_by_bound_s"][b] for v in roof.by("phase").values())
                  for b in ("compute", "memory", "overhead")}
    assert all(_close(totals.by_bound_s[b], vectorised[b]) for b in vectorised)
    assert totals.notes == roof.notes and totals.unknown_compute == roof.unknown_compute


def test_a_size_curve_is_left_to_the_vectorised_path():
    from dataclasses import replace

    device = CATALOG.devices["rtx-4090"]
    eff = replace(device_efficiency(device), size_curve=((1e6, 0.2), (1e12, 0.9)))
    with pytest.raises(ValueError, match="size curve"):
        price_totals(transformer_ledger(load_model("llama-3.2-1b"), Step(batch=1, new_tokens=8, context=8)), device, eff)


def test_an_estimate_imports_no_numpy():
    """Start-up (issue 15): a known family's estimate on the command line never imports numpy or torch."""
    code = ("import sys; from sizeup.cli.main import main; main(['estimate', 'llama-3.1-8b', '--device', 'rtx-4090',"
            " '--json']); print(sorted(m for m in ('numpy', 'torch', 'yaml') if m in sys.modules), file=sys.stderr)")
    for _ in range(2):  # the first run may fill the data-file cache (yaml)
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ),
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "[]"


def test_half_rate_accumulate_parts_price_tensor_kernels_at_the_fraction_of_their_halved_peak():
    """GeForce: the FP16/BF16 FP32-accumulate rate is half the FP16-accumulate one, and torch.matmul fp16 reaches
    ~0.98-1.07 of it (RTX 3060 24.8 of 25.25 TF, RTX 4090 168.4 of 165.2: zzc0721/torch-performance-test-data
    #131, #78), against 0.72 typical on full-rate parts; the data-centre parts keep the kind's fraction."""
    from sizeup.hardware.catalog import load_catalog
    from sizeup.price.efficiency import default_efficiency
    from sizeup.price.rates import HALF_RATE, OpClasses, half_rate_accumulate, inverse_rates
    from sizeup.ledger import Ledger, OpKind, OpRecord

    catalog = load_catalog(include_user=False)
    geforce, a100 = catalog.device("rtx-4090"), catalog.device("a100-sxm-80gb")
    assert half_rate_accumulate(geforce, "fp16") and half_rate_accumulate(geforce, "bf16")
    assert not half_rate_accumulate(a100, "fp16") and not half_rate_accumulate(geforce, "fp8")
    eff = default_efficiency("gpu")
    ledger = Ledger(ops=[OpRecord(op="aten.convolution", kind=OpKind.CONV, scope="c", flops=10**9, matmul_flops=10**9,
                                  bytes_read=1, bytes_written=1, dtype="fp16")])
    classes = OpClasses.of(ledger)
    rate = 1 / inverse_rates(geforce, eff, classes).tensor[1][0]
    assert rate == pytest.approx(geforce.peak_flops_per_s["fp16"] * eff.tensor[f"conv@{HALF_RATE}"].typical)
    rate = 1 / inverse_rates(a100, eff, classes).tensor[1][0]
    assert rate == pytest.approx(a100.peak_flops_per_s["fp16"] * eff.tensor["conv"].typical)
    # an engine's own kernel fraction (llama.cpp MMVQ, a calibration) is kept over the half-rate rule
    own = eff.with_overrides(tensor={**eff.tensor, "conv": eff.tensor["conv"].__class__(0.1, 0.1, 0.1)})
    assert 1 / inverse_rates(geforce, own, classes).tensor[1][0] == pytest.approx(geforce.peak_flops_per_s["fp16"] * 0.1)


def test_fp32_matrix_work_on_the_fp32_cores_takes_its_architecture_class_fraction():
    """gpu.yaml matmul@simt (dedicated FP32 lanes: V100 SGEMM 14.51 of 15.7 TF) vs matmul@simt-shared
    (GA10x/AD10x/GB20x, FP32 lanes shared with INT32: RTX 4090 55.6 of 82.6 TF); a calibration that
    measured its own vector fraction keeps it."""
    from sizeup.hardware.catalog import load_catalog
    from sizeup.ledger import Ledger, OpKind, OpRecord
    from sizeup.price.efficiency import default_efficiency
    from sizeup.price.rates import OpClasses, inverse_rates, simt_class
    from sizeup.ranges import Range

    catalog = load_catalog(include_user=False)
    ledger = Ledger(ops=[OpRecord(op="aten.mm", kind=OpKind.MATMUL, scope="", flops=10**12, matmul_flops=10**12)])
    table = default_efficiency("gpu")
    for device_id, key in (("v100-sxm2-16gb", "matmul@simt"), ("t4", "matmul@simt"), ("rtx-4090", "matmul@simt-shared")):
        device = catalog.device(device_id)
        assert simt_class(device) == key.partition("@")[2]
        rates = inverse_rates(device, table, OpClasses.of(ledger))
        assert rates.tensor[1][0] == pytest.approx(1 / (device.vector_flops_per_s["fp32"] * table.tensor[key].typical))
    measured = table.with_overrides(vector=Range(0.5, 0.5, 0.5))
    v100 = catalog.device("v100-sxm2-16gb")
    rates = inverse_rates(v100, measured, OpClasses.of(ledger))
    assert rates.tensor[1][0] == pytest.approx(1 / (v100.vector_flops_per_s["fp32"] * 0.5))


def test_a_power_limited_board_computes_at_its_sustained_clock_and_keeps_its_bandwidth():
    """data/devices/t4.yaml: ~900 MHz under sustained compute (mlcommons/inference_results_v0.5 issue #20),
    not the 1,590 MHz boost; memory-bound time is unchanged (a power cap lowers the SM clock only)."""
    from dataclasses import replace as dc_replace

    from sizeup.hardware.catalog import load_catalog
    from sizeup.ledger import Ledger, OpKind, OpRecord
    from sizeup.price.efficiency import default_efficiency
    from sizeup.price.rates import OpClasses, inverse_rates, sustained_factor

    t4 = load_catalog(include_user=False).device("t4")
    assert sustained_factor(t4) == pytest.approx(900 / 1590)
    boosted = dc_replace(t4, sustained_clock_hz=None)
    ledger = Ledger(ops=[OpRecord(op="aten.mm", kind=OpKind.MATMUL, scope="", flops=10**12, matmul_flops=10**12,
                                  dtype="fp16")])
    eff = default_efficiency("gpu")
    held, rated = (inverse_rates(d, eff, OpClasses.of(ledger)) for d in (t4, boosted))
    assert held.tensor[1][0] == pytest.approx(rated.tensor[1][0] * 1590 / 900)
    assert held.bandwidth == rated.bandwidth
    assert any("sustained clock" in n for n in held.notes)


def test_a_sustained_clock_above_the_boost_clock_is_refused():
    from sizeup.errors import CatalogError
    from sizeup.hardware.catalog import builtin_data_dir, read_yaml
    from sizeup.hardware.schema import parse_device

    path = builtin_data_dir() / "devices" / "t4.yaml"
    data = read_yaml(path) | {"sustained_clock_mhz": 1700}
    with pytest.raises((CatalogError, ValueError), match="sustained_clock_mhz"):
        parse_device(data, path)


def test_a_power_capped_card_rated_below_its_boost_clock_scales_from_its_rated_clock():
    """data/devices/h100-nvl-94gb.yaml: NVIDIA rates the 400 W H100 NVL's tensor peaks at 1,545 MHz (835.5 TF /
    (132 SMs x 4,096)), below its 1,785 MHz boost; its derived sustained clock 1,243 MHz (the H100 SXM5's 1,830 MHz
    rated clock x the base-clock ratio 1,080 / 1,590) sets the share of those peaks, 0.80, not 1,243 / 1,785."""
    from sizeup.price.rates import sustained_factor

    catalog = load_catalog(include_user=False)
    nvl = catalog.device("h100-nvl-94gb")
    assert nvl.rated_clock_hz == pytest.approx(835.5e12 / (132 * 4096), rel=1e-3)
    assert sustained_factor(nvl) == pytest.approx(1830 * 1080 / 1590 / 1545, rel=1e-3)
    assert sustained_factor(catalog.device("h100-pcie-80gb")) == pytest.approx(1830 * 1095 / 1590 / 1620, rel=1e-3)
    # the 700 W SXM part is the reference the efficiency fractions were measured on: no derate
    assert sustained_factor(catalog.device("h100-sxm-80gb")) == 1.0


def test_the_h200_sxm_computes_at_the_h100_sxm_reference_not_below_it():
    """data/devices/h200-sxm-141gb.yaml and h100-sxm-80gb.yaml notes: the same GH100 die at the same 700 W; under power
    caps of 200-700 W the H100 remains slightly the better part for compute-bound DGEMM (arXiv:2604.11391), so neither part takes a
    sustained clock of its own and a compute-bound step differs between them only where it waits on memory."""
    from sizeup.ledger import Ledger, OpKind, OpRecord
    from sizeup.price.efficiency import device_efficiency
    from sizeup.price.rates import OpClasses, inverse_rates, sustained_factor

    catalog = load_catalog(include_user=False)
    h100, h200 = catalog.device("h100-sxm-80gb"), catalog.device("h200-sxm-141gb")
    assert sustained_factor(h200) == sustained_factor(h100) == 1.0
    ledger = Ledger(ops=[OpRecord(op="aten.mm", kind=OpKind.MATMUL, scope="", flops=10**12, matmul_flops=10**12,
                                  dtype="fp8")])
    rates = [inverse_rates(d, device_efficiency(d), OpClasses.of(ledger)) for d in (h100, h200)]
    assert rates[1].tensor[1][0] == pytest.approx(rates[0].tensor[1][0], rel=1e-3)
    assert rates[1].bandwidth[1] < rates[0].bandwidth[1]  # 4.8 vs 3.35 TB/s: only memory-bound time differs


def test_a_sustained_clock_above_the_rated_clock_is_refused():
    from sizeup.errors import CatalogError
    from sizeup.hardware.catalog import builtin_data_dir, read_yaml
    from sizeup.hardware.schema import parse_device

    path = builtin_data_dir() / "devices" / "h100-nvl-94gb.yaml"
    with pytest.raises((CatalogError, ValueError), match="sustained_clock_mhz"):
        parse_device(read_yaml(path) | {"sustained_clock_mhz": 1700}, path)
    with pytest.raises((CatalogError, ValueError), match="rated_clock_mhz"):
        parse_device(read_yaml(path) | {"rated_clock_mhz": 1900}, path)


def test_fp4_without_fp4_tensor_units_is_said_to_run_weight_only():
    """Before Blackwell no GPU has FP4 tensor units: an FP4 format's matmuls run weight-only (unpacked to 16 bits in
    the kernel) at the bf16 peak, and the estimate says so; on Blackwell they run at the FP4 peak with no such note."""
    from sizeup.api import estimate

    hopper = estimate("llama-3.1-8b", device="h100-sxm-80gb", engine="vllm", quant="nvfp4")
    assert any("fp4 matmul run weight-only" in a and "tensor bf16 peak" in a for a in hopper.assumptions)
    blackwell = estimate("llama-3.1-8b", device="b200", engine="vllm", quant="nvfp4")
    assert not any("weight-only" in a for a in blackwell.assumptions)
