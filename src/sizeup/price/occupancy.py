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
show the effect (Volta: TensorRT at batch 1 runs 3-4x slower than its peak and bandwidth allow); where
a library splits K over idle SMs (TensorRT 10 on Ada at batch 1 runs at ~25% of peak) no figure is
set and the law is off: an unset architecture is priced as filling its SMs, as before. Matrix products and attention are
left out: GEMV and split-K kernels spread a long K over the SMs (LLM decode streams weights at full
bandwidth), so the output-tile count does not bound them.
"""

from __future__ import annotations

from functools import lru_cache

from sizeup.errors import CatalogError
from sizeup.hardware.catalog import builtin_data_dir, read_yaml
from sizeup.price.efficiency import parse_entry
from sizeup.ranges import Range

__all__ = ["OCCUPANCY_KINDS", "UNITS", "conv_tile_outputs", "wave_fraction"]

UNITS = ("tensor", "vector")

OCCUPANCY_KINDS = frozenset({"gpu", "soc"})
"""Device kinds whose compute units are GPU multiprocessors fed by a grid of thread blocks."""


@lru_cache(maxsize=1)
def _tiles() -> dict[str, dict[str, tuple[Range, str]]]:
    path = builtin_data_dir() / "efficiency" / "overheads.yaml"
    data = read_yaml(path)
    table = data.get("occupancy") if isinstance(data, dict) else None
    if not isinstance(table, dict):
        raise CatalogError(f"{path}: expected a mapping 'occupancy' (architecture -> conv tiles)")
    out: dict[str, dict[str, tuple[Range, str]]] = {}
    for arch, entry in table.items():
        if not isinstance(entry, dict) or set(entry) - {f"conv_tile_outputs_{u}" for u in UNITS}:
            raise CatalogError(f"{path}: occupancy.{arch}: expected conv_tile_outputs_tensor and/or _vector")
        out[arch] = {key.rsplit("_", 1)[1]: parse_entry(value, path, f"occupancy.{arch}.{key}", False)
                     for key, value in entry.items()}
    return out


def conv_tile_outputs(architecture: str | None, unit: str) -> tuple[Range, str] | None:
    """(output elements one thread block computes, its source) for a convolution kernel on the `unit`
    ('tensor' cores or 'vector' FP32 lanes) of `architecture`; None where no row measured the effect."""
    return _tiles().get(architecture or "", {}).get(unit)


def wave_fraction(outputs, units: int, tile: float):
    """Per op, the fraction of `units` SMs its `outputs` (elements, numpy array) keep busy in tiles of
    `tile` elements: T / (ceil(T / units)·units) with T = ceil(outputs / tile); 1 where outputs is 0."""
    import numpy as np

    tiles = np.ceil(np.asarray(outputs, dtype=float) / tile)
    waves = np.ceil(tiles / units)
    return np.where(tiles > 0, tiles / np.maximum(waves * units, 1.0), 1.0)
