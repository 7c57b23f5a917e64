"""`--calibration NAME` for estimate, train and plan: price with the efficiencies measured on a device.

A profile from `sizeup calibrate` holds the local device's measured peaks and fitted efficiencies.
`--device local` prices on that measured device; naming the catalog entry of the same hardware
(`--device h200`, recognised when the profile was measured) prices on its datasheet peaks with the
efficiencies rescaled so that the achieved rates stay the measured ones. Which fit an estimate takes is
decided by its workload class and engine (measure.profiles.choose_profile), and said in its assumptions.
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
    from sizeup.cli.db import DB_HELP

    p.add_argument("--db", metavar="PATH|URL", help=DB_HELP)


def load_calibration(args: argparse.Namespace, kind: str = "llm"):
    """The profile named by --calibration; for `--device local` without one, the default profile
    ("local", what `sizeup calibrate` saves); otherwise None. `kind`: what the command estimates ("llm",
    "vision" or "train", measure.profiles.ESTIMATE_CLASSES), with `args.engine` where it has one: only a fit of
    that workload class and engine is applied."""
    name = getattr(args, "calibration", None)
    device = getattr(args, "device", None)  # one name, a comma-separated list, or (plan) a list of names
    names = device.split(",") if isinstance(device, str) else list(device or [])
    if not name and LOCAL not in [d.strip() for d in names]:
        return None  # no calibration asked for: the store and numpy stay unimported
    from sizeup.measure.calibrate import DEFAULT_PROFILE
    from sizeup.measure.profiles import Workload, choose_profile
    from sizeup.store import open_store, resolve_db

    name = name or DEFAULT_PROFILE
    implicit = name == DEFAULT_PROFILE and not args.calibration
    needs_calibrate = ConfigError("--device local prices on a measured machine: run 'sizeup calibrate --quick' "
                                  "first (or name a profile with --calibration NAME)")
    path = resolve_db(args.db)
    if isinstance(path, Path) and not args.db and not path.exists():  # reading never creates a store
        if implicit:
            raise needs_calibrate
        raise ConfigError(f"--calibration {name!r}: no run database yet at {path} (save a profile with "
                          "'sizeup calibrate', or give --db PATH)")
    with open_store(path, readonly=True) as store:
        if implicit and name not in store.calibrations():
            raise needs_calibrate
        engine = getattr(args, "engine", None)
        return choose_profile(store, name, Workload.of_engine(kind, engine if isinstance(engine, str) else None),
                              implicit=implicit)


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
    if profile.notes:
        notes = [f"{d.id}: {note}" for d in devices for note in profile.notes]
    else:
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
