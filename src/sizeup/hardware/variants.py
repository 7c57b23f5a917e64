"""Variants a device file declares: the unified-memory sizes a chip is sold with, and power modes.

A device file may say

    memory_options: [8, 16, 24]        # GiB the same chip (and GPU bin) is sold with
    power_modes:
      base: MAXN_SUPER                 # the mode the file's own figures describe
      source: <where the mode table was read>
      retrieved: <date>
      caveat: <optional: what a user must know about the table, said in every derived peak of its modes>
      modes:
        - {name: 15W, budget_w: 15, gpu_max_mhz: 612, gpu_units: 8, cpu_online: 6, cpu_max_mhz: 1497.6,
           emc_max_mhz: 2133, aliases: [...], names: [...], notes: [...]}

and the catalog gains one device per other memory size (`<id>-<N>gb`) and per other power mode
(`<id>-<mode>`), each a variant of the same product (`variant_group`, `variant_of`), named as users type
them ("M2 16GB", "orin nano 15w"). A memory variant changes the memory size only: bandwidth and peaks
belong to the chip and bin. A power mode scales the compute peaks by active units x GPU clock and the
bandwidth by the memory-controller (EMC) clock, both over the base mode's: the mode's caps are upper
bounds the DVFS governor stays under, which jetson_clocks pins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from sizeup.errors import CatalogError
from sizeup.hardware.schema import DeviceSpec, _Fields
from sizeup.units import GIB

__all__ = ["MemoryOption", "PowerMode", "PowerModes", "parse_variants", "expand_variants", "link_host_memory",
           "MODE_FIELDS"]

MODE_FIELDS = ("budget_w", "gpu_max_mhz", "gpu_units", "cpu_online", "cpu_max_mhz", "emc_max_mhz")
"""Numbers each power mode states (the nvpmodel caps); budget_w and cpu_max_mhz are absent where the mode
leaves them uncapped (MAXN)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PowerMode:
    name: str
    budget_w: float | None
    gpu_max_hz: float
    gpu_units: int
    cpu_online: int
    cpu_max_hz: float | None
    """None: uncapped (the module's maximum)."""
    emc_max_hz: float
    aliases: tuple[str, ...] = ()
    """Labels appended to each of the base device's names ('maxn' -> 'orin nano maxn')."""
    names: tuple[str, ...] = ()
    """Whole names the mode's variant answers to besides those (e.g. 'orin nano 7w' for a mode only one
    firmware of the product has)."""
    notes: tuple[str, ...] = ()

    def clocks(self) -> dict[str, float]:
        out = {"gpu_max_hz": self.gpu_max_hz, "gpu_units": float(self.gpu_units), "cpu_online": float(self.cpu_online),
               "emc_max_hz": self.emc_max_hz, "cpu_max_hz": self.cpu_max_hz, "budget_w": self.budget_w}
        return {k: v for k, v in out.items() if v is not None}


@dataclass(frozen=True, slots=True, kw_only=True)
class PowerModes:
    base: str
    modes: tuple[PowerMode, ...]
    source: str
    retrieved: str
    caveat: str = ""
    """What a user must know about the table (e.g. read in an unverified transcription): every derived peak of a
    mode says it, so an estimate's assumptions show it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryOption:
    memory_bytes: int


def _mode(item: Any, path: str, i: int) -> PowerMode:
    m = _Fields(item, path, f"power_modes.modes[{i}].")
    m.check_keys({"name", "aliases", "names", "notes", *MODE_FIELDS})
    units, cpus = m.integer("gpu_units", required=True), m.integer("cpu_online", required=True)
    cpu = m.number("cpu_max_mhz", required=False)
    return PowerMode(name=m.text("name"), budget_w=m.number("budget_w", required=False),
                     gpu_max_hz=m.number("gpu_max_mhz") * 1e6, gpu_units=units, cpu_online=cpus,
                     cpu_max_hz=None if cpu is None else cpu * 1e6, emc_max_hz=m.number("emc_max_mhz") * 1e6,
                     aliases=m.strings("aliases"), names=m.strings("names"), notes=m.strings("notes"))


def parse_variants(data: Any, path: str) -> tuple[tuple[MemoryOption, ...], PowerModes | None]:
    """The `memory_options` and `power_modes` of one device file's mapping (validated; () / None if absent)."""
    f = _Fields(data, path)
    memory: list[MemoryOption] = []
    raw = f.data.get("memory_options")
    if raw is not None:
        if not isinstance(raw, list) or not raw:
            raise f.fail("memory_options", "a non-empty list of memory sizes in GiB")
        for i, value in enumerate(raw):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e6:
                raise CatalogError(f"{path}: field 'memory_options[{i}]' = {value!r}: expected a memory size in GiB")
        memory = [MemoryOption(memory_bytes=int(v * GIB)) for v in sorted(set(raw))]
    p = f.mapping("power_modes")
    if p is None:
        return tuple(memory), None
    p.check_keys({"base", "modes", "source", "retrieved", "caveat"})
    items = p.data.get("modes")
    if not isinstance(items, list) or not items:
        raise p.fail("modes", "a non-empty list of power modes")
    modes = tuple(_mode(item, path, i) for i, item in enumerate(items))
    names = [m.name for m in modes]
    if len(set(names)) != len(names):
        raise p.fail("modes", "modes with distinct names")
    base = p.text("base")
    if base not in names:
        raise p.fail("base", f"the name of one of its modes ({', '.join(names)})")
    return tuple(memory), PowerModes(base=base, modes=modes, source=p.text("source"), retrieved=p.date("retrieved"),
                                     caveat=p.text("caveat", required=False) or "")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", re.sub(r"^mode_", "", text.lower())).strip("-")


def _typed(text: str) -> str:
    """A mode or size label as users type it: 'MODE_15W_6CORE' -> '15w 6core', 'MAXN_SUPER' -> 'maxn super'."""
    return re.sub(r"[^a-z0-9]+", " ", re.sub(r"^mode_", "", text.lower())).strip()


_SIZE = re.compile(r"\s*\b\d+\s*gb\b", re.IGNORECASE)


def _aliases(base: DeviceSpec, labels: list[str], drop_size: bool = False) -> tuple[str, ...]:
    """Each distinct base name (aliases, id) followed by each label, duplicates (as normalised) dropped;
    with `drop_size`, a memory size already in a name is dropped first ('m3 max 128gb' -> 'm3 max 48gb')."""
    from sizeup.hardware.resolve import normalize_name

    out: list[str] = []
    seen: set[str] = set()
    for name in (*base.aliases, base.id):
        if drop_size:
            name = _SIZE.sub("", name).strip()
        for label in labels:
            alias = f"{name} {label}"
            key = normalize_name(alias)
            if key not in seen:
                seen.add(key)
                out.append(alias)
    return tuple(out)


def _group(base: DeviceSpec) -> str:
    return base.variant_group or base.id


def _memory_variant(base: DeviceSpec, option: MemoryOption) -> DeviceSpec:
    gib = option.memory_bytes / GIB
    size = f"{gib:g}gb"
    name = re.sub(r"\s*\(\s*\)", "", re.sub(r",?\s*\b\d+\s*GB\b", "", base.name))  # drop the file's own size
    return replace(
        base, id=f"{base.id}-{size}", name=f"{name} {gib:g}GB", aliases=_aliases(base, [size], drop_size=True),
        memory_bytes=option.memory_bytes, variant_group=_group(base), preferred_variant=False, variant_of=base.id,
        notes=(f"{gib:g} GB variant of {base.id} ({base.name}, {base.memory_bytes / GIB:g} GB in its file): "
               f"memory size only; bandwidth and peaks belong to the chip and GPU bin, not to the memory size",
               *base.notes), path=base.path)


def link_host_memory(soc: DeviceSpec, devices: dict[str, DeviceSpec]) -> DeviceSpec:
    """An SoC whose host CPU (its CPU cluster, sharing its unified memory) has another memory size, linked to
    the CPU cluster's variant of the SoC's size; that variant is added to `devices` the first time (and the
    CPU cluster becomes the usual variant of its group)."""
    cpu = devices.get(soc.host_cpu) if soc.host_cpu else None
    if cpu is None or cpu.memory_bytes == soc.memory_bytes:
        return soc
    variant = _memory_variant(cpu, MemoryOption(memory_bytes=soc.memory_bytes))
    if variant.id not in devices:
        devices[variant.id] = variant
        if cpu.variant_group is None:
            devices[cpu.id] = replace(cpu, variant_group=cpu.id, preferred_variant=True)
    return replace(soc, host_cpu=variant.id)


def _scaled(rates: dict[str, float], factor: float) -> dict[str, float]:
    return {k: v * factor for k, v in rates.items()}


def _mode_variant(base: DeviceSpec, ref: PowerMode, mode: PowerMode, modes: PowerModes,
                  widen: tuple[float, float]) -> DeviceSpec:
    units = base.compute_unit_name or "units"
    compute = (mode.gpu_units * mode.gpu_max_hz) / (ref.gpu_units * ref.gpu_max_hz)
    memory = mode.emc_max_hz / ref.emc_max_hz
    how = (f"x {compute:.3f}: the {mode.name} power mode runs {mode.gpu_units} {units} at up to "
           f"{mode.gpu_max_hz / 1e6:,.0f} MHz against {ref.gpu_units} at {ref.gpu_max_hz / 1e6:,.0f} MHz in {ref.name}"
           + (f" ({modes.caveat})" if modes.caveat else ""))
    derived = {k: f"{v} {how}" for k, v in base.derived_peaks.items()}
    for table, rates in (("tensor", base.peak_flops_per_s), ("vector", base.vector_flops_per_s)):
        for precision, value in rates.items():
            derived.setdefault(f"{table}.{precision}", f"derived: {base.id}'s {table} {precision} "
                                                        f"{value / 1e12:,.2f} T {how}")
    if base.fp16_acc16_flops_per_s is not None:
        derived.setdefault("fp16_acc16", f"derived: {base.id}'s fp16-accumulate rate {how}")
    labels = [_typed(mode.name), *mode.aliases]
    cpu = f"{mode.cpu_online} CPU cores " + ("uncapped" if mode.cpu_max_hz is None else
                                             f"up to {mode.cpu_max_hz / 1e6:,.0f} MHz")
    sustained = base.sustained_clock_hz
    return replace(
        base, id=f"{base.id}-{_slug(mode.name)}", name=f"{base.name}, {mode.name} power mode",
        aliases=(*_aliases(base, labels), *mode.names), peak_flops_per_s=_scaled(base.peak_flops_per_s, compute),
        vector_flops_per_s=_scaled(base.vector_flops_per_s, compute),
        fp16_acc16_flops_per_s=None if base.fp16_acc16_flops_per_s is None else base.fp16_acc16_flops_per_s * compute,
        memory_bandwidth_bytes_per_s=base.memory_bandwidth_bytes_per_s * memory,
        boost_clock_hz=mode.gpu_max_hz, compute_units=mode.gpu_units,
        sustained_clock_hz=None if sustained is None else min(sustained, mode.gpu_max_hz),
        tdp_w=mode.budget_w if mode.budget_w is not None else base.tdp_w,
        derived_peaks=derived, derived_range=base.derived_range or widen,
        variant_group=_group(base), preferred_variant=False, variant_of=base.id,
        power_mode=mode.name, power_mode_clocks=mode.clocks(),
        notes=(f"{mode.name} power mode of {base.id} (nvpmodel caps): GPU up to {mode.gpu_max_hz / 1e6:,.0f} MHz on "
               f"{mode.gpu_units} {units}, {cpu}, memory controller (EMC) up to {mode.emc_max_hz / 1e6:,.0f} MHz; "
               f"compute peaks x {compute:.3f} and bandwidth x {memory:.3f} of the {ref.name} figures of {base.id}",
               *mode.notes),
        source=f"{modes.source}; other figures as {base.id}: {base.source}", retrieved=modes.retrieved)


def _check_base(base: DeviceSpec, ref: PowerMode, path: str) -> None:
    clock = base.boost_clock_hz
    if clock is None or abs(ref.gpu_max_hz / clock - 1) > 0.01 or ref.gpu_units != base.compute_units:
        raise CatalogError(f"{path}: field 'power_modes.base' = {ref.name!r}: expected the mode the file's figures "
                           f"describe (gpu_max_mhz {ref.gpu_max_hz / 1e6:g} = boost_clock_mhz "
                           f"{(clock or 0) / 1e6:g}, gpu_units {ref.gpu_units} = compute_units {base.compute_units})")


def expand_variants(base: DeviceSpec, data: Any, widen: tuple[float, float]) -> tuple[DeviceSpec, list[DeviceSpec]]:
    """(the base device with the names of its own memory size and power mode added, its generated variants).
    `widen` is the efficiency range of a peak derived with the device's clock (a scaled one is derived too)."""
    memory, modes = parse_variants(data, base.path)
    if not memory and modes is None:
        return base, []
    out: list[DeviceSpec] = []
    labels: list[str] = []
    for option in memory:
        if option.memory_bytes == base.memory_bytes:
            labels += [f"{base.memory_bytes / GIB:g}gb"]
        else:
            out.append(_memory_variant(base, option))
    group = _group(base)
    updated = replace(base, variant_group=group, preferred_variant=base.preferred_variant or base.variant_group is None)
    if modes is not None:
        ref = next(m for m in modes.modes if m.name == modes.base)
        _check_base(base, ref, base.path)
        labels += [_typed(ref.name), *ref.aliases]
        updated = replace(updated, power_mode=ref.name, power_mode_clocks=ref.clocks())
        out += [_mode_variant(base, ref, m, modes, widen) for m in modes.modes if m is not ref]
    extra = [a for a in _aliases(base, labels) if a not in base.aliases]
    return replace(updated, aliases=(*base.aliases, *extra)), out
