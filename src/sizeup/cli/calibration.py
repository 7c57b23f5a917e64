"""`--calibration NAME` for estimate, train, plan and roofline: the flags, and the flags handed to
`sizeup.api.calibration`, where what a profile does to pricing is described."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from sizeup.api.calibration import LOCAL, calibrated_scope

if TYPE_CHECKING:
    from sizeup.hardware.schema import DeviceSpec

__all__ = ["LOCAL", "add_calibration_arguments", "add_runtime_argument", "calibrated_scope", "load_calibration",
           "resolve_device", "runtime_from_args"]


def add_calibration_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--calibration", metavar="NAME",
                   help="price with the efficiencies of this profile from 'sizeup calibrate' (--device local: the "
                        "measured machine itself)")
    from sizeup.cli.db import DB_HELP

    p.add_argument("--db", metavar="PATH|URL", help=DB_HELP)


def load_calibration(args: argparse.Namespace, kind: str = "llm"):
    """The profile named by --calibration (sizeup.api.calibration.load_calibration); `kind`: what the command
    estimates ("llm", "vision" or "train"), with `args.engine` where it has one."""
    from sizeup.api.calibration import load_calibration as load

    device = getattr(args, "device", None)  # one name, a comma-separated list, or (plan) a list of names
    names = device.split(",") if isinstance(device, str) else list(device or [])
    engine = getattr(args, "engine", None)
    return load(getattr(args, "calibration", None), getattr(args, "db", None), names, kind=kind,
                engine=engine if isinstance(engine, str) else None)


def resolve_device(args: argparse.Namespace, catalog, profile) -> DeviceSpec:
    """--device NAME from the catalog, or the calibrated machine for `--device local`."""
    from sizeup.api.calibration import resolve_device as resolve

    return resolve(args.device, catalog, profile)


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
