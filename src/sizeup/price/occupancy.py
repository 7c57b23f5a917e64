"""How much of a GPU a convolution fills: wave quantization of its output tiles over the SMs.

A convolution runs as an implicit GEMM: each thread block (CTA) computes one tile of the output
(batch·H·W × C_out) and the hardware schedules the tiles onto the streaming multiprocessors in waves.
With T tiles on S SMs the kernel runs ceil(T / S) waves and keeps T / (ceil(T / S)·S) of the SMs busy;
the rest idle, for compute and for the memory traffic their load units would issue. At large batch T is
many times S and the fraction is ~1; at batch 1 the late ResNet-50 stages have 7×7 or 14×14 outputs,
too few tiles to fill 80-132 SMs, so the layer runs at a fraction of the chip's peak.

The output elements per tile (data/efficiency/overheads.yaml, occupancy.<architecture>) stand for the
tiles the kernel library picks at such sizes: tensor-core kernels need larger tiles than FP32 FFMA
kernels to feed their MMA units from shared memory. They are set per architecture where measured rows
show the effect (Volta: a compiled engine at batch 1 runs 3-4x slower than its peak and bandwidth allow); where
a library splits K over idle SMs (a compiled engine on Ada at batch 1 runs at ~25% of peak) no figure is
set and the law is off: an unset architecture is priced as filling its SMs, as before.

Matrix products (`matmul_busy`) follow the same law where a tile is sourced for the architecture
(occupancy.<arch>.matmul_tile_outputs_tensor: the cuBLAS / compiled-engine kernel names of small-M profiles give
the tile, e.g. ampere_fp16_s16816gemm_fp16_64x64), for FP16/BF16 products priced through a runtime of
overheads.yaml (engine-level pricing keeps its measured kernels.yaml fractions). A product with fewer rows
than the smallest tile's side (LLM decode: M = batch) is left out: it runs as a GEMV or split-K kernel that
spreads K over the SMs and streams its weights at full bandwidth. Rows are recovered from the op's bytes:
outputs = M*N, K = FLOPs / (2*M*N), and M + N = (activation + weight elements read) / K. Only a product
with fewer tiles than SMs (one partial wave) is slowed: with more, its last partial wave is part of what the
matmul efficiency (measured on such products) already holds, and a compiler's autotuner or cuBLAS's heuristic
pick the tile that wastes least of it. With fewer, the library first splits K over the idle SMs (slices of
at least occupancy.<arch>.matmul_split_k_min). Attention is left out (a fused kernel per head and query block).
"""

from __future__ import annotations

from functools import lru_cache

from sizeup.errors import CatalogError
from sizeup.hardware.catalog import builtin_data_dir, read_yaml
from sizeup.ranges import parse_entry
from sizeup.ranges import Range

__all__ = ["OCCUPANCY_KINDS", "UNITS", "conv_tile_outputs", "matmul_tile_outputs", "split_k_min", "matmul_busy", "wave_fraction"]

UNITS = ("tensor", "vector")

OCCUPANCY_KINDS = frozenset({"gpu", "soc"})
"""Device kinds whose compute units are GPU multiprocessors fed by a grid of thread blocks."""


_KEYS = frozenset({f"conv_tile_outputs_{u}" for u in UNITS} | {"matmul_tile_outputs_tensor", "matmul_tile_outputs_tensor_large",
                                                              "matmul_split_k_min"})


@lru_cache(maxsize=1)
def _tiles() -> dict[str, dict[str, tuple[Range, str]]]:
    path = builtin_data_dir() / "efficiency" / "overheads.yaml"
    data = read_yaml(path)
    table = data.get("occupancy") if isinstance(data, dict) else None
    if not isinstance(table, dict):
        raise CatalogError(f"{path}: expected a mapping 'occupancy' (architecture -> conv tiles)")
    out: dict[str, dict[str, tuple[Range, str]]] = {}
    for arch, entry in table.items():
        if not isinstance(entry, dict) or set(entry) - _KEYS:
            raise CatalogError(f"{path}: occupancy.{arch}: expected some of {', '.join(sorted(_KEYS))}")
        out[arch] = {key.replace("_tile_outputs_", ":").replace("matmul_split", "matmul:split"):
                     parse_entry(value, path, f"occupancy.{arch}.{key}", False)
                     for key, value in entry.items()}
    return out


def conv_tile_outputs(architecture: str | None, unit: str) -> tuple[Range, str] | None:
    """(output elements one thread block computes, its source) for a convolution kernel on the `unit`
    ('tensor' cores or 'vector' FP32 lanes) of `architecture`; None where no row measured the effect."""
    return _tiles().get(architecture or "", {}).get(f"conv:{unit}")


def matmul_tile_outputs(architecture: str | None, rows: float = 128.0) -> tuple[Range, str] | None:
    """(output elements one thread block of an FP16 matrix-product kernel computes for a product of `rows`
    rows, its source); None where unsourced. The kernel libraries pick larger tiles for more rows
    (occupancy.<arch>.matmul_tile_outputs_tensor below LARGE_ROWS, _tensor_large from there)."""
    table = _tiles().get(architecture or "", {})
    return table.get("matmul:tensor_large" if rows >= LARGE_ROWS else "matmul:tensor")


def split_k_min(architecture: str | None) -> tuple[Range, str] | None:
    """(the least K one slice of a split-K product keeps, its source); None: K is not split."""
    return _tiles().get(architecture or "", {}).get("matmul:split_k_min")


LARGE_ROWS = 256
"""Rows from which the sm80 libraries' picks move from 64x128 / 128x64 tiles to 128x128 and larger (overheads.yaml
occupancy.ampere-ga100: a serving engine's A100 kernel map, 64x128 at 128 tokens, 128x128 / 256x128 at 256)."""

_TILED_DTYPES = frozenset({"fp16", "bf16"})
"""Precisions of the kernels the matmul tiles were read from (FP16 tensor-core GEMMs)."""


def _gemm_shape(o) -> tuple[float, float, float] | None:
    """(output elements M*N, the smaller of M and N, K) of one execution of a matrix product, from its bytes."""
    from math import sqrt

    from sizeup.units import DTYPE_BITS

    size = DTYPE_BITS.get(o.dtype, 16) / 8
    outputs = o.bytes_written / size
    if outputs <= 0 or not o.matmul_flops:
        return None
    k = o.matmul_flops / (2 * outputs)
    s = o.bytes_read / size / k if k > 0 else 0.0  # M + N (+1 for a bias)
    disc = s * s - 4 * outputs
    if disc < 0:  # reads do not fit a weight-times-activation product (batched or quantized): law off
        return None
    return outputs, (s - sqrt(disc)) / 2, k


def _busy(outputs: float, k: float, sms: int, tile: float, k_min: float | None) -> float:
    """Share of `sms` busy: T = ceil(outputs / tile) tiles. With T >= sms the product fills the chip (1: its
    partial last wave is left to the matmul efficiency, measured on such products); with fewer tiles than SMs
    the library splits K into up to floor(sms / T) slices of at least `k_min` (none where k_min is None), and
    the T*slices blocks fill that share of the one wave."""
    from math import ceil, floor

    tiles = ceil(outputs / tile)
    if tiles >= sms:
        return 1.0
    if k_min:
        tiles *= max(1, min(floor(sms / tiles), floor(k / k_min)))
    return tiles / sms


def matmul_busy(ledger, device, runtime):
    """(per level and op the fraction of the SMs a matrix product keeps busy, note) or (None, None) where the
    law does not apply (no runtime, no SM count, no sourced tile, no product with enough rows)."""
    import numpy as np

    from sizeup.ledger import OpKind

    small = matmul_tile_outputs(device.architecture)
    if runtime is None or device.kind not in OCCUPANCY_KINDS or not device.compute_units or small is None:
        return None, None
    side = small[0].low ** 0.5  # the smallest tile is square (64x64): fewer rows than its side -> GEMV / split-K
    split = split_k_min(device.architecture)
    busy = np.ones((3, len(ledger.ops)))
    for i, o in enumerate(ledger.ops):
        shape = _gemm_shape(o) if o.kind == OpKind.MATMUL and o.dtype in _TILED_DTYPES else None
        if shape is None or shape[1] < side:
            continue
        outputs, rows, k = shape
        tile = matmul_tile_outputs(device.architecture, rows)[0]
        # fast end: the best of the tile and split ranges; slow end: the worst
        options = [_busy(outputs, k, device.compute_units, t, m) for t in (tile.low, tile.typical, tile.high)
                   for m in ((split[0].low, split[0].typical, split[0].high) if split else (None,))]
        typical = _busy(outputs, k, device.compute_units, tile.typical, split[0].typical if split else None)
        busy[:, i] = (max(options), typical, min(options))
    lowest = float(busy[1].min())
    if lowest >= 1.0:
        return None, None
    note = None if lowest >= 0.5 else (
        f"{device.id}: matrix products with fewer output tiles than its {device.compute_units} SMs run on part of "
        f"the chip (down to {lowest:.0%}); price/occupancy.py")
    return busy, note


def wave_fraction(outputs, units: int, tile: float):
    """Per op, the fraction of `units` SMs its `outputs` (elements, numpy array) keep busy in tiles of
    `tile` elements: T / (ceil(T / units)·units) with T = ceil(outputs / tile); 1 where outputs is 0."""
    import numpy as np

    tiles = np.ceil(np.asarray(outputs, dtype=float) / tile)
    waves = np.ceil(tiles / units)
    return np.where(tiles > 0, tiles / np.maximum(waves * units, 1.0), 1.0)
