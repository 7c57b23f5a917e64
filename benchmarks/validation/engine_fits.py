"""Engine settings fitted on TUNED rows (data/engines/NAME.yaml `settings`, each basis naming its rows), for
leave-one-source-out (tables.py, loso.py) and the engines' own scripts (validate_local_engines.py,
validate_quant_engines.py --loso).

A figure is keyed 'engines/NAME.yaml SETTING'. Its rule, as the data files state it: the median of its rows' implied
values (the value at which each row's own command reproduces the measurement); with no row left, the setting is
dropped and the engine's fallback applies (the device default for a bandwidth or matmul fraction, no host time for a
host-time figure, no reserve for a memory figure). Swapping is done on the loaded profiles in process
(`EngineProfile.range` answers the value given), restored afterwards."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

PREFIX = "engines/"

ENGINE_FITS: dict[tuple[str, str], tuple[str, ...]] = {
    # (data file, setting): the TUNED rows its basis names
    ("mlx", "decode_memory_lpddr"): ("mlx-1029-m4pro-llama31-8b-q4-p32k-tg", "mlx-pr1069-m2ultra-llama3-70b-bf16-tg",
                                     "mlx-1281-m4max-qwen25-72b-q6-tg", "mlx-lms103-m1pro-llama31-8b-q4-tg",
                                     "mlx-lms103-m1pro-qwen25-7b-q4-tg", "mlx-lms103-m1ultra128-r1-qwen32b-q8-tg",
                                     "mlx-lms103-m1ultra128-r1-llama70b-q8-tg", "mlx-pr1569-m3pro-qwen3-4b-q4-tg"),
    ("mlx", "prefill_matmul_quantized"): ("mlx-1029-m4pro-llama31-8b-q4-p32k-pp", "mlx-pr1569-m3pro-qwen3-4b-q4-pp"),
    ("mlx", "cold_start_s"): ("mlx-pr1069-m2ultra-llama3-70b-bf16-pp", "mlx-1281-m4max-qwen25-72b-q6-pp"),
    ("exllama", "decode_memory_gddr@ada"): ("exl1-lpbpr1-rtx-4090-llama-2-7b-gptq4-tg",
                                           "exl1-lpbpr1-rtx-4090-llama-2-13b-gptq4-tg"),
    ("exllama", "decode_memory_gddr"): ("exl1-lpbpr1-rtx-3090-ti-llama-2-7b-gptq4-tg",
                                       "exl1-lpbpr1-rtx-3090-ti-llama-2-13b-gptq4-tg", "exl1-6-rtx3060-llama7b-gptq4-tg"),
    ("exllama", "decode_memory_hbm"): ("exl1-266-a100pcie40-llama2-70b-gptq4-tg",),
    ("exllama", "prefill_matmul_quantized"): ("exl1-6-rtx3060-llama7b-gptq4-pp",),
    ("mlc", "decode_memory_gddr"): ("mlc-lpbpr1-rtx-4090-llama-2-7b-q4f16-tg", "mlc-lpbpr1-rtx-4090-llama-2-13b-q4f16-tg",
                                   "mlc-lpbpr1-rtx-3090-ti-llama-2-7b-q4f16-tg",
                                   "mlc-lpbpr1-rtx-3090-ti-llama-2-13b-q4f16-tg"),
    ("mlc", "decode_memory_lpddr@ampere-ga10b"): ("mlc-jc532-agxorin64-llama2-13b-q4f16-tg",),
    ("mlc", "decode_alu_ops_per_weight@mlc-q4f16_ft"): ("mlc-jc412-agxorin32-llama2-7b-q4f16ft-tg",
                                                         "mlc-jc532-agxorin32-llama2-7b-q4f16-tg"),
    ("torch-compile", "decode_memory_fraction.16bit.hbm@hopper"): ("tc-torchao-f8-h100-llama31-8b-bf16-tg",),
    ("torch-compile", "decode_memory_fraction.16bit.gddr@ada"): ("tc-gptfast27-4090-llama2-7b-bf16-tg",),
    ("torch-compile", "decode_memory_fraction.weight_only.hbm@hopper"): ("tc-torchao-f8-h100-llama31-8b-fp8-wo-tg",),
    ("torch-compile", "decode_memory_fraction.weight_only.hbm@ampere-ga100"): ("tc-gptfast207-a100-llama7b-int8wo-tg",),
    ("torch-compile", "quantized_on_device_reserved"): ("tc-torchao-f8-h100-llama31-8b-fp8-wo-mem",),
    ("hf", "bnb_int8_linear_host_s"): ("bnb-quanto62-a10g-llama-2-7b-int8-bnb-tg",
                                       "bnb-quanto62-a10g-mistral-7b-int8-bnb-tg",
                                       "bnb-dohu012-t4-qwen25-05b-int8-bnb-tg"),
    ("vllm", "host_per_request_s"): ("fp4-vllm23369-h100x2-gpt-oss-20b-mxfp4-sharegpt-out",
                                     "fp4-vllm23696-b200x8-gpt-oss-120b-mxfp4-sharegpt-out"),
    ("vllm", "request_intake_s"): ("fp4-vllm23369-h100x2-gpt-oss-20b-mxfp4-sharegpt-ttft",
                                   "fp4-vllm23369-h100x2-gpt-oss-20b-mxfp4-sharegpt-tpot",
                                   "fp4-vllm23696-b200x8-gpt-oss-120b-mxfp4-sharegpt-ttft",
                                   "fp4-vllm23696-b200x8-gpt-oss-120b-mxfp4-sharegpt-tpot"),
    ("sglang", "moe_gemm_memory@mxfp4@hopper"): ("fp4-achatbot183-h100-gpt-oss-20b-mxfp4-c32-out",),
    ("vllm", "rocm_matmul@fp8"): ("srv-mlperf41-mi300xx8-llama2-70b-offline-tps",
                                  "srv-mlperf41-mi300xx1-llama2-70b-999-offline-tps"),
    ("tensorrt-llm", "moe_gemm@fp8@hopper@rows2048"): ("moe-trtllm017-h100x1-mixtral-8x7b-fp8-i2048o128",
                                                       "moe-trtllm017-h200x1-mixtral-8x7b-fp8-i2048o128",
                                                       "moe-trtllm017-h100x8-mixtral-8x7b-fp8-i5000o500",
                                                       "moe-trtllm017-h200x8-mixtral-8x7b-fp8-i5000o500"),
    ("tensorrt-llm", "moe_gemm@fp8@hopper@rows512"): ("moe-trtllm017-h100x4-mixtral-8x7b-fp8-i1000o1000",
                                                      "moe-trtllm017-h200x4-mixtral-8x7b-fp8-i1000o1000",
                                                      "moe-trtllm017-h100x8-mixtral-8x7b-fp8-i128o2048",
                                                      "moe-trtllm017-h200x8-mixtral-8x7b-fp8-i128o2048"),
    ("hf", "bnb_4bit_linear_host_s"): ("bnb-quanto62-a10g-llama-2-7b-nf4-tg", "bnb-quanto62-a10g-mistral-7b-nf4-tg"),
}


def key_of(figure: tuple[str, str]) -> str:
    return f"{PREFIX}{figure[0]}.yaml {figure[1]}"


def figure_of(key: str) -> tuple[str, str]:
    file, setting = key.removeprefix(PREFIX).split(" ", 1)
    return file.removesuffix(".yaml"), setting


def row_figure(row_id: str) -> str | None:
    """The key of the engine setting a TUNED row set, or None."""
    return next((key_of(fig) for fig, ids in ENGINE_FITS.items() if row_id in ids), None)


def committed(key: str) -> float:
    from sizeup.engines.profile import engine_profile

    name, setting = figure_of(key)
    return engine_profile(name, None).range(setting).typical


def fallback_of(key: str) -> str:
    setting = figure_of(key)[1]
    if setting == "request_intake_s":
        return "the setting dropped: the front end busy for the request's whole latency (request_overhead_s)"
    if setting.endswith("_s"):
        return "the setting dropped: no such host time (LLM.int8() / 4-bit as plain int8 / 4-bit matmuls, no first-call cost)"
    if "_ops_per_" in setting:
        return "the setting dropped: no instruction term (decode priced on the bandwidth alone)"
    if setting.startswith("quantized_on_device"):
        return "the setting dropped: no reserve beyond the weights, cache and activations"
    return "the setting dropped: the device default (or the engine's other memory class, said in the estimate)"


@contextlib.contextmanager
def engine_values(values: dict[str, float | None]) -> Iterator[None]:
    """The engines' profiles with each setting of `values` (keys from key_of) answering that value, its low and
    high moved by the same factor (None: the setting absent); restored afterwards."""
    from sizeup.engines.profile import EngineProfile
    from sizeup.ranges import Range

    swapped = {figure_of(k): v for k, v in values.items()}
    if not swapped:
        yield
        return
    original = EngineProfile.range

    def patched(self, setting):
        if (self.id, setting) not in swapped:
            return original(self, setting)
        value, old = swapped[self.id, setting], original(self, setting)
        if value is None:
            return None
        if old is None or not old.typical:
            return Range(value, value, value)
        return Range(*(v * value / old.typical for v in (old.low, old.typical, old.high)))

    EngineProfile.range = patched
    try:
        yield
    finally:
        EngineProfile.range = original
