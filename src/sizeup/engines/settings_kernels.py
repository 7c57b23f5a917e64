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
weight-bound (each entry's source names the kernel, by release where it changed). Where the fraction was measured
against the rows each expert gets per step (tokens x top-k / experts: the M of each expert's GEMM), it is a table of
`moe_gemm@<format>@<architecture>@rows<R>` points instead: the fraction at a step's rows per expert is interpolated
in log R between them and held at the end points beyond (below the first point the kernel streams its weights and
the memory share prices it). A format or architecture without keys is priced as the engine's other matmuls.
"""

from __future__ import annotations

import math

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


def moe_kernel(model, weights: str, rows: float | None = None) -> Kernel | None:
    """The grouped GEMM `model` (an ExecutionModel) runs for a MoE layer's experts of format `weights` on its device,
    from its profile's `moe_gemm@FORMAT@ARCH` (or its `@rows<R>` table, read at `rows` per expert; None: the table's
    first point) and `moe_gemm_memory@FORMAT@ARCH` (`moe_gemm_memory@FORMAT@ARCH@DEVICE` first, where the engine
    ships kernel configs tuned for that GPU alone); None where neither is stated."""
    profile, arch = model.profile, model.device.architecture or ""
    suffix = f"@{weights.lower()}@{arch}"
    memory_key = next((k for k in (f"moe_gemm_memory{suffix}@{model.device.id}", f"moe_gemm_memory{suffix}")
                       if k in profile.ranges), f"moe_gemm_memory{suffix}")
    fraction, memory = profile.range(f"moe_gemm{suffix}"), profile.range(memory_key)
    keys = [k for k, v in ((f"moe_gemm{suffix}", fraction), (memory_key, memory)) if v is not None]
    table = rows_table(profile, f"moe_gemm{suffix}@rows")
    if table:
        fraction, used = at_rows(table, rows)
        keys = [*used, *keys]
    if fraction is None and memory is None:
        return None
    description = f"MoE grouped GEMM on {weights} weights"
    if table and rows is not None:
        description += f" at {rows:,.3g} rows per expert"
    return Kernel(model.NAME, "MoE grouped GEMM", description, "priced", fraction,
                  "; ".join(keys), "; ".join(_source(profile, k) for k in keys), memory,
                  table=f"data/engines/{profile.id}.yaml")


def rows_table(profile, prefix: str) -> list[tuple[float, str, Range]]:
    """The profile's `PREFIX<R>` ranges as (R, key, range), by R."""
    points = []
    for key in profile.ranges:
        if key.startswith(prefix):
            try:
                rows = float(key[len(prefix):])
            except ValueError:
                continue
            value = profile.range(key)  # through range(): a fit's swapped value (or a dropped point) is what it reads
            if value is not None:
                points.append((rows, key, value))
    return sorted(points, key=lambda p: p[0])


def at_rows(table: list[tuple[float, str, Range]], rows: float | None) -> tuple[Range, list[str]]:
    """The range at `rows` (None: the first point) interpolated in log rows between the table's points, held at its
    ends, and the keys it was read from."""
    if rows is None or rows <= table[0][0]:
        return table[0][2], [table[0][1]]
    if rows >= table[-1][0]:
        return table[-1][2], [table[-1][1]]
    for (r0, k0, v0), (r1, k1, v1) in zip(table, table[1:]):
        if r0 <= rows <= r1:
            w = (math.log(rows) - math.log(r0)) / (math.log(r1) - math.log(r0))
            mix = [a + w * (b - a) for a, b in ((v0.low, v1.low), (v0.typical, v1.typical), (v0.high, v1.high))]
            return Range(min(mix), mix[1], max(mix)), [k0, k1]
    return table[-1][2], [table[-1][1]]
