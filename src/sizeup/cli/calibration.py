"""`--calibration NAME` for estimate, train and plan: price with the efficiencies measured on a device.

A profile from `sizeup calibrate` holds the local device's measured peaks and fitted efficiencies.
`--device local` prices on that measured device; naming the catalog entry of the same hardware
(`--device h200`, recognised when the profile was measured) prices on its datasheet peaks with the
efficiencies rescaled so that the achieved rates stay the measured ones.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from sizeup.errors import ConfigError

if TYPE_CHECKING:
    from sizeup.hardware.schema import DeviceSpec

LOCAL = "local"


def add_calibration_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--calibration", metavar="NAME",
                   help="price with the efficiencies of this profile from 'sizeup calibrate' (--device local: the "
                        "measured machine itself)")
    p.add_argument("--db", help="run database holding the calibration (default: the user data folder)")


def load_calibration(args: argparse.Namespace):
    """The profile named by --calibration; for `--device local` without one, the default profile
    ("local", what `sizeup calibrate` saves); otherwise None."""
    name = getattr(args, "calibration", None)
    device = getattr(args, "device", None)  # one name, a comma-separated list, or (plan) a list of names
    names = device.split(",") if isinstance(device, str) else list(device or [])
    if not name and LOCAL not in [d.strip() for d in names]:
        return None  # no calibration asked for: the store and numpy stay unimported
    from sizeup.measure.calibrate import DEFAULT_PROFILE, load_profile
    from sizeup.measure.store import Store, default_path

    name = name or DEFAULT_PROFILE
    implicit = name == DEFAULT_PROFILE and not args.calibration
    needs_calibrate = ConfigError("--device local prices on a measured machine: run 'sizeup calibrate --quick' "
                                  "first (or name a profile with --calibration NAME)")
    path = Path(args.db).expanduser() if args.db else default_path()
    if not args.db and not path.exists():  # reading never creates a store
        if implicit:
            raise needs_calibrate
        raise ConfigError(f"--calibration {name!r}: no run database yet at {path} (save a profile with "
                          "'sizeup calibrate', or give --db PATH)")
    with Store(path, readonly=True) as store:
        if implicit and name not in store.calibrations():
            raise needs_calibrate
        return load_profile(store, name)


def resolve_device(args: argparse.Namespace, catalog, profile) -> DeviceSpec:
    """--device NAME from the catalog, or the calibrated machine for `--device local`."""
    if args.device == LOCAL:
        if profile is None:
            raise ConfigError("--device local prices on a measured machine: add --calibration NAME "
                              "(from 'sizeup calibrate')")
        return profile.device
    return catalog.device(args.device)


@contextmanager
def calibrated_scope(profile, devices: list[DeviceSpec]) -> Iterator[list[str]]:
    """Price `devices` with the profile's efficiencies inside the block; yields the notes to show."""
    from sizeup.price.efficiency import calibrated

    if profile is None:
        yield []
        return
    overrides = {d.id: profile.efficiency_on(d) for d in devices}
    fitted = "fitted to measured runs" if profile.fitted else "micro-benchmarks only, not yet fitted to models"
    notes = [f"{d.id}: efficiencies from calibration {profile.name!r} ({fitted})" for d in devices]
    with calibrated(overrides):
        yield notes


def add_runtime_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runtime", metavar="NAME",
                   help="runtime whose per-op overhead and kernel count apply (data/efficiency/overheads.yaml: "
                        "pytorch-eager, pytorch-eager-amp, torch-compile, cuda-graphs, onnxruntime, tensorrt, "
                        "llama-cpp, mlx); default: the device kind's generic launch cost")


def runtime_from_args(args: argparse.Namespace):
    if not getattr(args, "runtime", None):
        return None
    from sizeup.engines.runtimes import get_runtime

    return get_runtime(args.runtime)
