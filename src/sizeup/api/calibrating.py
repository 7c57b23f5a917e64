"""`calibrate`: this machine's measured peaks (micro-benchmarks), and one profile per workload class, engine and
version fitted from every matching run in the store, saying why each other run was left out, as `sizeup
calibrate` (the work is `sizeup.measure.calibrate_team.calibrate`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sizeup.api.options import Options, option
from sizeup.measure.calibrate_team import CalibrateReport as CalibrationResult

__all__ = ["CalibrateOptions", "CalibrationResult", "calibrate"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CalibrateOptions(Options):
    quick: bool = option(False, "(re)measure the micro-benchmarks: GEMM sweep and copy")
    runs: tuple[int, ...] | None = option(None, "run ids to fit to (default: every finished run of the device type, "
                                                "from any machine)", minimum=1)
    name: str = option("local", "profile name; class fits are saved as NAME/CLASS/ENGINE@VERSION")
    device: str = option("cpu", "this machine's device for the micro-benchmarks: cpu, cuda, cuda:N or mps")
    device_type: str | None = option(None, "calibrate other machines' device type (a catalog name, e.g. h100) from "
                                           "their stored runs, against its datasheet peaks, without micro-benchmarks")
    statistic: Literal["auto", "min", "p10", "median", "cpu-min"] = option(
        "auto", "which statistic of each point's repetitions to fit (auto: cpu-min where every point has CPU times, "
                "else min)")
    threads: int | None = option(None, "torch CPU threads for the micro-benchmarks (set for the whole process)",
                                 minimum=1, maximum=4096)
    db: str | Path | None = option(None, "run database: a path or a postgresql:// URL (default: $SIZEUP_DB, else the "
                                         "user data folder)")


def calibrate(options: CalibrateOptions | None = None, /, *, progress: Callable[[str], None] | None = None,
              warn: Callable[[str], None] | None = None, **changes: Any):
    """Measure (or reuse) the micro-benchmarks and fit the stored runs; the keywords are `CalibrateOptions`'
    fields. Returns a `CalibrationResult` (`sizeup.measure.calibrate_team.CalibrateReport`: the profiles saved,
    the runs left out and why; `to_dict()`). `progress` is told what runs before a long step; `warn` is told when
    a database server is away and the profiles go to the local spool (default: a Python warning)."""
    from sizeup.api.options import build_options
    from sizeup.api.run_store import python_warning
    from sizeup.measure import calibrate_team
    from sizeup.store import open_store

    o = build_options(CalibrateOptions, options, changes, "calibrate")
    if o.threads:
        import torch

        torch.set_num_threads(o.threads)
    team = calibrate_team.CalibrateOptions(name=o.name, device=o.device, quick=o.quick, statistic=o.statistic,
                                           run_ids=o.runs, device_type=o.device_type)
    with open_store(o.db, on_spool=warn or python_warning) as store:
        if progress and (o.quick or o.device_type or o.name not in store.calibrations()):
            progress("fitting stored runs" if o.device_type else "GEMM sweep and copy micro-benchmarks")
        return calibrate_team.calibrate(store, team)

