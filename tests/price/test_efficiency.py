"""Per-architecture-class tensor entries of the efficiency tables (price.efficiency.class_efficiency)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sizeup.errors import CatalogError
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.hf_config import load_model
from sizeup.ingest.transformer_ops import Step, transformer_ledger
from sizeup.price.efficiency import (calibrated, default_efficiency, device_efficiency, parse_efficiency,
                                     table_efficiency, tensor_fraction)
from sizeup.price.rates import price_totals

CATALOG = load_catalog(include_user=False)


def test_cdna3_parts_take_their_class_gemm_fractions_and_others_keep_the_kinds():
    gpu = default_efficiency("gpu")
    cdna3 = gpu.by_architecture["cdna3"]
    for device_id in ("mi300x", "mi325x"):
        eff = device_efficiency(CATALOG.devices[device_id])
        # the ROCm blogs' MI325X TAF over the peak at its 1,447 MHz BF16 GEMM clock (gpu.yaml basis)
        assert tensor_fraction(eff, "matmul", "bf16") == cdna3["matmul"]
        assert tensor_fraction(eff, "matmul", "fp8") == cdna3["matmul@fp8"]
        assert round(cdna3["matmul"].typical, 3) == round(616.42 / (1307.4 * 1447 / 2100), 3)
        assert round(cdna3["matmul@fp8"].typical, 3) == round(1143.18 / (2614.9 * 1447 / 2100), 3)
        assert eff.origin.startswith("defaults") and "cdna3 class" in eff.origin
        assert tensor_fraction(eff, "attention", "bf16") == gpu.tensor["attention"]  # no class entry: the kind's
    h100 = CATALOG.devices["h100-sxm-80gb"]
    assert device_efficiency(h100) is gpu and table_efficiency(h100) is gpu


def test_a_calibration_replaces_the_class_entries():
    device = CATALOG.devices["mi300x"]
    measured = default_efficiency("gpu").with_overrides(origin="calibration test")
    with calibrated({device.id: measured}):
        assert device_efficiency(device) is measured
    assert device_efficiency(device) is table_efficiency(device)


def test_an_mi300x_fp8_prefill_runs_at_the_class_fraction_of_its_sustained_clock():
    device = CATALOG.devices["mi300x"]
    ledger = transformer_ledger(load_model("llama-3.1-8b"), Step(batch=8, new_tokens=2048, context=2048), weights="fp8")
    gpu = default_efficiency("gpu")
    kind_only = gpu.with_overrides(by_architecture={})
    slow = price_totals(ledger, device).total_s.typical
    fast = price_totals(ledger, device, kind_only).total_s.typical
    # a compute-bound prefill: the class fraction (0.634) at 1,207 of 2,100 MHz against the kind's 0.57 at the
    # same clock: at least the fraction ratio slower, less than the ratio with the clock
    assert fast * 0.57 / 0.634 * 0.95 < slow
    notes = price_totals(ledger, device).notes
    assert any("sustained clock, 1207 of 2100 MHz" in n for n in notes)


def test_a_malformed_class_entry_is_a_catalog_error(tmp_path: Path):
    base = {"kind": "gpu", "tensor": {k: {"low": 0.5, "typical": 0.6, "high": 0.7, "basis": "b", "source": "s", "retrieved": "d"}
                                      for k in ("matmul", "conv", "attention")},
            "vector": {"low": 0.5, "typical": 0.6, "high": 0.7, "basis": "b", "source": "s", "retrieved": "d"},
            "memory": {"low": 0.5, "typical": 0.6, "high": 0.7, "basis": "b", "source": "s", "retrieved": "d"},
            "overhead_s": {"low": 1e-6, "typical": 1e-5, "high": 1e-4, "basis": "b", "source": "s", "retrieved": "d"}}
    path = tmp_path / "gpu.yaml"
    with pytest.raises(CatalogError, match="by_architecture.cdna3"):
        parse_efficiency({**base, "by_architecture": {"cdna3": {"matmul": 0.5}}}, path)
    with pytest.raises(CatalogError, match="by_architecture.cdna3.tensor.gemm"):
        parse_efficiency({**base, "by_architecture": {"cdna3": {"tensor": {"gemm": base["tensor"]["matmul"]}}}}, path)
