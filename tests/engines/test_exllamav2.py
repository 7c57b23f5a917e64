"""ExLlamaV2 / ExLlama (engines/exllamav2.py): EXL2 bits per weight, the kernels of the data files."""

import pytest

from sizeup.engines import resolve
from sizeup.errors import ConfigError
from sizeup.formats import get_format
from sizeup.hardware.catalog import load_catalog


def test_exl2_bits_per_weight_parse():
    fmt = get_format("exl2-4.65bpw")
    assert fmt.layout.bits == 4.65 and fmt.layout.head_bits == 6.0  # convert.py -hb default 6
    with pytest.raises(ConfigError, match="between 2 and 8"):
        get_format("exl2-9bpw")


def test_v1_decode_fraction_by_architecture():
    cat = load_catalog()
    ada = resolve("exllama", cat.device("rtx-4090")).matrix_kernel("gptq-int4", True, 1)
    ampere = resolve("exllama", cat.device("rtx-3090-ti")).matrix_kernel("gptq-int4", True, 1)
    assert ada.memory.typical == 0.93 and ampere.memory.typical == 0.57  # data/engines/exllama.yaml


def test_cuda_only():
    with pytest.raises(ConfigError, match="CUDA"):
        resolve("exllamav2", load_catalog().device("apple-m4-pro"))


def test_v1_prompt_gemm_accumulates_in_fp16_from_the_june_2023_refactor():
    # exllama commit ba8666c (2023-06-04): reconstruct + cublasHgemm (fp16 accumulate); before it torch.matmul
    # (fp32 accumulate). The RTX 3090's fp16-accumulate tensor peak is twice its fp32-accumulate one (142.5 vs 71.2)
    device = load_catalog().device("rtx-3090")
    june = resolve("exllama@2023-06-05", device).matrix_kernel("gptq-int4-g0", False, 1920)
    may = resolve("exllama@2023-05-23", device).matrix_kernel("gptq-int4-g0", False, 1920)
    assert june.peak == "fp16_acc16" and june.fraction.typical == 0.46  # kernels.yaml cublas ampere-ga10x
    assert may.peak == "fp16" and may.fraction.typical == 0.80  # the TUNED RTX 3060 row (2023-05-23)
