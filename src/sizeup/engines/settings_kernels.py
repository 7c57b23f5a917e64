"""Matrix kernels an engine states in its own data file (data/engines/NAME.yaml `settings`), for engines whose
efficiencies are a few sourced fractions rather than a kernel table (MLX, ExLlamaV2, MLC-LLM):

- `decode_memory_<class>@<architecture>`, else `decode_memory_<class>` (class: hbm, gddr, lpddr), else
  `decode_memory`: the fraction of the peak memory bandwidth
  the engine's batch-1 decode kernels reach (its quantized mat-vec streams the weights once);
- `decode_alu_ops_per_weight@<format>`: instructions the decode mat-vec issues per weight of that format (its
  dequantization and multiply-add), priced at the SMs' instruction rate (the vector fp32 peak / 2) beside the
  bandwidth: it binds only where the lanes x clock are few (a Jetson power mode), not at a desktop GPU's clocks;
- `prefill_matmul` (16-bit weights) and `prefill_matmul_quantized` (packed weights): the fraction of the peak the
  engine names (`peak`: 'fp16' tensor, 'fp32-vector' on Apple GPUs) its prompt's matrix products reach end to end.

A missing key leaves the device kind's default for that phase, and the estimate says which kernel priced it.

A mixture-of-experts layer's grouped GEMM (`moe_kernel`, any engine through ExecutionModel.moe_kernel):
`moe_gemm@<format>@<architecture>`, the fraction of the peak its products are priced at (the format's own tensor
peak, or the 16-bit one where the device has none: FP4 on Hopper) when the experts' work is compute-bound, and
`moe_gemm_memory@<format>@<architecture>`, the fraction of the bandwidth it streams the expert weights at when
weight-bound (each entry's source names the kernel, by release where it changed). A format or architecture
without keys is priced as the engine's other matmuls.
"""

from __future__ import annotations

from sizeup.engines.kernels import Kernel, memory_class
from sizeup.ranges import Range

__all__ = ["settings_kernel", "moe_kernel", "FLOAT_FORMATS"]

FLOAT_FORMATS = frozenset({"fp16", "bf16", "fp32", "f16", "f32"})
"""Formats a 16/32-bit GEMM runs on directly (no packed weights to unpack)."""


def _source(profile, key: str) -> str:
    return next((s for s in profile.sources if s.startswith(f"{key}: ")), f"{key}: data/engines/{profile.id}.yaml")


def settings_kernel(model, weights: str, decode: bool, *, peak: str, name: str) -> Kernel | None:
    """The kernel `model` (an ExecutionModel) runs for `weights` in this phase, from its profile's settings, or None
    where its data states none (the device default then applies). `name`: the kernel's name in the estimate."""
    profile = model.profile
    if decode:
        cls, arch = memory_class(model.device), model.device.architecture or ""
        for key in (f"decode_memory_{cls}@{arch}", f"decode_memory_{cls}", "decode_memory"):
            memory = profile.range(key)
            if memory is not None:
                alu_key = f"decode_alu_ops_per_weight@{weights.lower()}"
                ops = profile.range(alu_key)
                if ops is not None:  # the mat-vec's dequantization: ops x weights on the SMs' lanes, per token
                    return Kernel(model.NAME, f"{name} decode", f"{model.NAME} batch-1 mat-vec", "alu",
                                  Range(2 / ops.high, 2 / ops.typical, 2 / ops.low), f"{key}; {alu_key}",
                                  f"{_source(profile, key)}; {_source(profile, alu_key)}", memory,
                                  table=f"data/engines/{profile.id}.yaml")
                return Kernel(model.NAME, f"{name} decode", f"{model.NAME} batch-1 mat-vec", "device-default", None,
                              key, _source(profile, key), memory, table=f"data/engines/{profile.id}.yaml")
        return None
    key = "prefill_matmul" if weights.lower() in FLOAT_FORMATS else "prefill_matmul_quantized"
    fraction = profile.range(key)
    if fraction is None:
        return None
    vector = peak == "vector"  # matmuls on the vector units (Apple GPUs): the fraction is of the vector fp32 peak
    return Kernel(model.NAME, f"{name} prefill", f"{model.NAME} prompt GEMM", "device-default" if vector else peak,
                  None if vector else fraction, key, _source(profile, key), None,
                  table=f"data/engines/{profile.id}.yaml", vector=fraction if vector else None)


def moe_kernel(model, weights: str) -> Kernel | None:
    """The grouped GEMM `model` (an ExecutionModel) runs for a MoE layer's experts of format `weights` on its device,
    from its profile's `moe_gemm@FORMAT@ARCH` and `moe_gemm_memory@FORMAT@ARCH`; None where neither is stated."""
    profile, arch = model.profile, model.device.architecture or ""
    suffix = f"@{weights.lower()}@{arch}"
    fraction, memory = profile.range(f"moe_gemm{suffix}"), profile.range(f"moe_gemm_memory{suffix}")
    if fraction is None and memory is None:
        return None
    keys = [k for k, v in ((f"moe_gemm{suffix}", fraction), (f"moe_gemm_memory{suffix}", memory)) if v is not None]
    return Kernel(model.NAME, "MoE grouped GEMM", f"MoE grouped GEMM on {weights} weights", "priced", fraction,
                  "; ".join(keys), "; ".join(_source(profile, k) for k in keys), memory,
                  table=f"data/engines/{profile.id}.yaml")
