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
