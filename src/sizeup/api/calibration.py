"""Pricing with a calibration profile: estimate, train and plan take `calibration=NAME` (and `db=`).

A profile from `sizeup calibrate` holds the local device's measured peaks and fitted efficiencies.
`device="local"` prices on that measured device; naming the catalog entry of the same hardware
(`device="h200"`, recognised when the profile was measured) prices on its datasheet peaks with the
efficiencies rescaled so that the achieved rates stay the measured ones. Which fit an estimate takes is
decided by its workload class and engine (measure.profiles.choose_profile), and said in its assumptions.
Nothing here touches the run store unless a calibration is asked for.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from sizeup.errors import ConfigError

if TYPE_CHECKING:
    from sizeup.hardware.schema import DeviceSpec

__all__ = ["LOCAL", "calibrated_scope", "load_calibration", "resolve_device"]

LOCAL = "local"
"""The device name of the machine a calibration profile was measured on."""


def load_calibration(name: str | None, db: str | Path | None, devices: Sequence[str | DeviceSpec] = (), *,
                     kind: str = "llm", engine: str | None = None):
    """The profile `name`; for a `local` device without one, the default profile ("local", what `sizeup
    calibrate` saves); otherwise None (the store is then never opened). `kind`: what is estimated ("llm",
    "vision" or "train", measure.profiles.ESTIMATE_CLASSES), with its `engine`: only a fit of that workload class
    and engine is applied (measure.profiles.choose_profile). `db`: the run store, a path or a postgresql:// URL
    (default: $SIZEUP_DB, else the user data folder); reading never creates one."""
    names = [d.strip() for d in devices if isinstance(d, str)]
    if not name and LOCAL not in names:
        return None  # no calibration asked for: the store and numpy stay unimported
    from sizeup.measure.calibrate import DEFAULT_PROFILE
    from sizeup.measure.profiles import Workload, choose_profile
    from sizeup.store import open_store, resolve_db

    implicit = not name
    name = name or DEFAULT_PROFILE
    needs_calibrate = ConfigError("--device local prices on a measured machine: run 'sizeup calibrate --quick' "
                                  "first (or name a profile with --calibration NAME)")
    path = resolve_db(db)
    if isinstance(path, Path) and not db and not path.exists():
        if implicit:
            raise needs_calibrate
        raise ConfigError(f"--calibration {name!r}: no run database yet at {path} (save a profile with "
                          "'sizeup calibrate', or give --db PATH)")
    with open_store(path, readonly=True) as store:
        if implicit and name not in store.calibrations():
            raise needs_calibrate
        return choose_profile(store, name, Workload.of_engine(kind, engine), implicit=implicit)


def resolve_device(device: str | DeviceSpec, catalog, profile) -> DeviceSpec:
    """A catalog device by name, a device spec as given, or the calibrated machine for `local`."""
    from sizeup.hardware.schema import DeviceSpec

    if isinstance(device, DeviceSpec):
        return device
    if device == LOCAL:
        if profile is None:
            raise ConfigError("--device local prices on a measured machine: add --calibration NAME "
                              "(from 'sizeup calibrate')")
        return profile.device
    return catalog.device(device)


@contextmanager
def calibrated_scope(profile, devices: Sequence[DeviceSpec]) -> Iterator[list[str]]:
    """Price `devices` with the profile's efficiencies inside the block (a context variable: concurrent
    calls do not see each other's); yields the notes to show."""
    from sizeup.price.efficiency import calibrated

    if profile is None:
        yield []
        return
    overrides = {d.id: profile.efficiency_on(d) for d in devices}
    if profile.notes:  # which fit of the profile applies, and why (measure.profiles.choose_profile)
        notes = [f"{d.id}: {note}" for d in devices for note in profile.notes]
    else:
        fitted = "fitted to measured runs" if profile.fitted else "micro-benchmarks only, not yet fitted to models"
        notes = [f"{d.id}: efficiencies from calibration {profile.name!r} ({fitted})" for d in devices]
    with calibrated(overrides):
        yield notes
