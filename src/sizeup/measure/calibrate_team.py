"""`sizeup calibrate` as a library call: micro-benchmarks of this machine, then one profile per workload class,
engine and version fitted from every matching run in the store (measure.calibrate_runs), each saved under
NAME/CLASS[/ENGINE@VERSION] with its key, beside NAME (the measured peaks).

`--device-type TYPE` calibrates a device type of other machines (a team's H100s) from this one: no
micro-benchmarks run, and the efficiencies are fitted as fractions of the catalog entry's datasheet peaks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sizeup.errors import ConfigError, MeasureError

__all__ = ["CalibrateOptions", "CalibrateReport", "calibrate", "local_device_type", "fit_profile_name"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CalibrateOptions:
    name: str = "local"
    device: str = "cpu"
    """This machine's device the micro-benchmarks run on (cpu, cuda, cuda:N, mps)."""
    quick: bool = False
    """Measure the micro-benchmarks again (and fit only the runs asked for with run_ids)."""
    run_ids: tuple[int, ...] | None = None
    statistic: str = "auto"
    device_type: str | None = None
    """Calibrate this device type (a catalog name) from other machines' runs; None: this machine's device."""


@dataclass(slots=True)
class CalibrateReport:
    name: str
    device_type: str | None
    bench: dict | None
    profiles: list[dict] = field(default_factory=list)
    """One entry per saved profile: its name, key, runs, machines, values, residual, notes."""
    ignored: list[dict] = field(default_factory=list)
    """Every run (or point) left out, with the reason."""
    result: Any = None

    def to_dict(self) -> dict[str, Any]:
        first = self.profiles[0] if self.profiles else None
        runs = sorted({r for p in self.profiles for r in p["runs"]})
        return {"name": self.name, "device_type": self.device_type, "bench": self.bench, "profiles": self.profiles,
                "ignored": self.ignored,
                # the first profile's fit, as `calibrate --json` printed it before profiles were kept per class
                "fitted": first["values"] if first else None,
                "residual_median": first["residual_median"] if first else None, "runs": runs,
                "statistic": first["statistic"] if first else None,
                "overhead_stderr_s": first["overhead_stderr_s"] if first else None,
                "compute_stderr": first["compute_stderr"] if first else None,
                "points": sum(p["points"] for p in self.profiles),
                "overhead_source": first["overhead_source"] if first else None,
                "notes": [n for p in self.profiles for n in p["notes"]]}


def local_device_type(device: str) -> str | None:
    """This machine's device type for `device` (cpu, cuda:N): measure.provenance.device_type_of of its CPU
    model or GPU product name."""
    from sizeup.measure.provenance import device_type_of

    if device.startswith("cuda"):
        import torch

        index = torch.device(device).index or 0
        return device_type_of(torch.cuda.get_device_name(index), gpu=True)
    from sizeup.hardware.local import _cpuinfo

    return device_type_of(_cpuinfo()[0], gpu=False)


def fit_profile_name(name: str, key: dict) -> str:
    """NAME/CLASS, with /ENGINE@VERSION where the engine is known: one profile per key."""
    from sizeup.measure.profiles import class_profile_name

    base = class_profile_name(name, key["workload_class"])
    if key.get("engine"):
        base += f"/{key['engine']}" + (f"@{key['engine_version']}" if key.get("engine_version") else "")
    return base


def _catalog_device(device_type: str):
    from sizeup.errors import SizeupError
    from sizeup.hardware.catalog import load_catalog

    try:
        return load_catalog().device(device_type)
    except SizeupError as e:
        raise ConfigError(f"device type {device_type!r} is not in the catalog: its peaks are unknown, so runs "
                          f"measured on it can be calibrated only on such a machine ({e})") from None


def calibrate(store, options: CalibrateOptions) -> CalibrateReport:
    from sizeup.measure.calibrate import local_device, microbenchmarks, profile_to_dict
    from sizeup.measure.calibrate_runs import calibrate_store

    here = options.device_type is None
    if here:
        device_type = local_device_type(options.device)
    else:
        device_type = _catalog_device(options.device_type).id
    bench = None
    if here:
        if options.quick or options.name not in store.calibrations():
            bench = microbenchmarks(options.device)
            store.save_calibration(options.name, device=options.device, source_runs=[],
                                   profile=profile_to_dict(local_device(bench), None, None, bench, []),
                                   key={"device_type": device_type})
        else:
            bench = store.calibration(options.name)["profile"].get("bench")
    report = CalibrateReport(name=options.name, device_type=device_type, bench=bench)
    if options.quick and not options.run_ids:
        return report

    def device_for(workload_class: str):
        if bench is not None and workload_class != "serving":
            from sizeup.measure.calibrate import load_profile

            return load_profile(store, options.name).device, bench
        return _catalog_device(device_type), None

    result = calibrate_store(store, device_type=device_type, device_for=device_for, run_ids=options.run_ids,
                             statistic=options.statistic)
    report.result = result
    report.ignored = [i.to_dict() for i in result.ignored]
    for fit in result.fits:
        name = fit_profile_name(options.name, fit.key)
        class_fit = {**fit.key, "runs": list(fit.runs), "hosts": list(fit.hosts), "points": fit.fit.points,
                     "statistic": fit.statistic, "rejected": [r.to_dict() for r in fit.rejected]}
        measured = bench if bench is not None and fit.key["workload_class"] != "serving" else None
        profile = profile_to_dict(fit.device, fit.fit.values, fit.fit.residual_median, measured, list(fit.runs),
                                  fit=fit.fit.to_dict(), statistic=fit.statistic, class_fit=class_fit)
        store.save_calibration(name, device=options.device if measured is not None else device_type,
                               profile=profile, source_runs=list(fit.runs), key=fit.key)
        report.profiles.append({"name": name, "key": dict(fit.key), "runs": list(fit.runs), "hosts": list(fit.hosts),
                                "values": fit.fit.values, "residual_median": fit.fit.residual_median,
                                "statistic": fit.statistic, "points": fit.fit.points,
                                "overhead_stderr_s": fit.fit.overhead_stderr_s,
                                "compute_stderr": fit.fit.compute_stderr,
                                "overhead_source": fit.fit.overhead_source, "notes": list(fit.fit.notes),
                                "device": fit.device.id})
    if not report.profiles and not options.quick and not result.ignored:
        raise MeasureError(f"nothing to calibrate on: no run of device type {device_type} in {store.where} (measure "
                           "a model first with sizeup measure, or use --quick)")
    return report
