"""llama.cpp's Hopper prefill fractions, refit against H100 PCIe's sustained tensor clock (kernels.yaml hopper entries;
data/devices sustained_clock_mhz): the TUNED H100 PCIe rows they were fitted on are reproduced at that clock."""

from __future__ import annotations

import pytest

from sizeup.api import estimate

# XiongjieDai/GPU-Benchmarks-on-LLM-Inference, 'LLaMA 3/Professional GPUs/H100_PCIe_v3.ipynb', llama-bench pp512,
# build e8496488 (May 2024): the TUNED rows of tests/validation/inference_measurements.yaml
ROWS = [("llama-3-70b", "q4_k_m", 1012.73), ("llama-3-8b", "q4_k_m", 8125.45), ("llama-3-8b", "f16", 10815.51)]


@pytest.mark.parametrize(("model", "quant", "measured"), ROWS)
def test_h100_pcie_pp512_rows_are_reproduced_at_the_sustained_clock(model, quant, measured):
    result = estimate(model, device="h100-pcie-80gb", engine="llama.cpp", quant=quant, batch=1, prompt=512, output=0,
                      build_date="2024-05-15")
    # each row's own implied fraction is within 9% of the class's median (0.104 / 0.122 around 0.113; one f16 row)
    assert result.prefill.tokens_per_s.typical == pytest.approx(measured, rel=0.10)
