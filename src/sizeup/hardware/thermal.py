"""Thermal trip points of device families (data/thermal/*.yaml): where the firmware throttles or stops.

Each file names the device ids it applies to (exact ids, or prefixes ending in '-') and lists trips in
ascending temperature: the die temperature in degrees Celsius, what happens, and, where a source
publishes it, the fraction of the power mode's clocks left at that trip. A later planner asks
`derate_at(device, temperature_c)` for the clock fraction to expect; an unpublished loss is reported as
unknown (None), never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sizeup.errors import CatalogError
from sizeup.hardware.catalog import read_yaml, subfolder_files
from sizeup.hardware.schema import DeviceSpec, _Fields

__all__ = ["TripPoint", "ThermalProfile", "ThermalDerate", "thermal_profile", "derate_at", "thermal_profiles"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TripPoint:
    name: str
    temperature_c: float
    """Die (junction) temperature in degrees Celsius at which the trip fires."""
    action: str
    clock_fraction: float | None = None
    """Fraction of the power mode's clocks left from this trip on; None: not published."""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "temperature_c": self.temperature_c, "action": self.action,
                "clock_fraction": self.clock_fraction}


@dataclass(frozen=True, slots=True, kw_only=True)
class ThermalProfile:
    id: str
    name: str
    applies_to: tuple[str, ...]
    sensor: str
    trips: tuple[TripPoint, ...]
    notes: tuple[str, ...]
    source: str
    retrieved: str
    path: str = ""

    def covers(self, device_id: str) -> bool:
        return any(device_id == a or (a.endswith("-") and device_id.startswith(a)) for a in self.applies_to)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "sensor": self.sensor, "trips": [t.to_dict() for t in self.trips],
                "notes": list(self.notes), "source": self.source, "retrieved": self.retrieved}


@dataclass(frozen=True, slots=True, kw_only=True)
class ThermalDerate:
    temperature_c: float
    clock_fraction: float | None
    """1.0 below the first trip; the last passed trip's published fraction; None when it is unpublished."""
    trip: TripPoint | None
    """The highest trip at or below the temperature (None: below every trip)."""
    basis: str


def parse_thermal(data: Any, path: str) -> ThermalProfile:
    f = _Fields(data, path)
    f.check_keys({"id", "name", "applies_to", "sensor", "trips", "notes", "source", "retrieved"})
    items = f.data.get("trips")
    if not isinstance(items, list) or not items:
        raise f.fail("trips", "a non-empty list of trip points")
    trips = []
    for i, item in enumerate(items):
        t = _Fields(item, path, f"trips[{i}].")
        t.check_keys({"name", "temperature_c", "action", "clock_fraction"})
        fraction = t.number("clock_fraction", required=False, positive=False)
        if fraction is not None and not 0 <= fraction <= 1:
            raise t.fail("clock_fraction", "a fraction in [0, 1]")
        trips.append(TripPoint(name=t.text("name"), temperature_c=t.number("temperature_c"),
                               action=t.text("action"), clock_fraction=fraction))
    if [t.temperature_c for t in trips] != sorted(t.temperature_c for t in trips):
        raise f.fail("trips", "trip points in ascending temperature")
    applies = f.strings("applies_to")
    if not applies:
        raise f.fail("applies_to", "a non-empty list of device ids or id prefixes ending in '-'")
    return ThermalProfile(id=f.text("id"), name=f.text("name"), applies_to=applies, sensor=f.text("sensor"),
                          trips=tuple(trips), notes=f.strings("notes"), source=f.text("source"),
                          retrieved=f.date("retrieved"), path=path)


@lru_cache(maxsize=8)
def thermal_profiles(folders: tuple[str, ...] = ()) -> tuple[ThermalProfile, ...]:
    """The built-in profiles, then those under `thermal/` of each catalog folder (a later id replaces)."""
    by_id: dict[str, ThermalProfile] = {}
    for path in subfolder_files("thermal", folders):
        profile = parse_thermal(read_yaml(path), str(path))
        by_id[profile.id] = profile
    return tuple(by_id.values())


def thermal_profile(device: DeviceSpec, folders: tuple[str, ...] = ()) -> ThermalProfile | None:
    """The profile of `device` (or of the device it is a variant of), if a data file covers it."""
    ids = [device.id] + ([device.variant_of] if device.variant_of else [])
    return next((p for p in thermal_profiles(folders) for i in ids if p.covers(i)), None)


def derate_at(device: DeviceSpec, temperature_c: float, folders: tuple[str, ...] = ()) -> ThermalDerate:
    """The clock fraction `device` keeps at a die temperature, from its family's published trip points."""
    if temperature_c != temperature_c or abs(temperature_c) > 1000:
        raise CatalogError(f"temperature {temperature_c!r}: expected degrees Celsius between -1000 and 1000")
    profile = thermal_profile(device, folders)
    if profile is None:
        return ThermalDerate(temperature_c=temperature_c, clock_fraction=None, trip=None,
                             basis=f"no thermal data for {device.id}")
    passed = [t for t in profile.trips if t.temperature_c <= temperature_c]
    if not passed:
        first = profile.trips[0]
        return ThermalDerate(temperature_c=temperature_c, clock_fraction=1.0, trip=None,
                             basis=f"below the first trip of {profile.name} ({first.name} at {first.temperature_c:g} C)")
    trip = passed[-1]
    known = "unpublished" if trip.clock_fraction is None else f"{trip.clock_fraction:g} of the clocks"
    return ThermalDerate(temperature_c=temperature_c, clock_fraction=trip.clock_fraction, trip=trip,
                         basis=f"{trip.name} at {trip.temperature_c:g} C ({trip.action}): {known} "
                               f"({profile.source}, read {profile.retrieved})")
