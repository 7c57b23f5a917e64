"""Version 4: provenance on every run (host, engine and its version, GPU driver and product, clocks and power
limit, sizeup version, workload hash, device type, workload class), a unique id per run and per point (so that a
run spooled while its database was away is uploaded once, `sizeup runs sync`), and the key of a calibration
profile (device type, engine and version, workload class).

Rows written before are backfilled from what they kept: the host from the writer's identity, the engine, driver,
GPU product and clocks from the run's environment, the workload class from its kind and config. What was never
recorded (the sizeup version, the workload hash, the power limit) stays NULL.
"""

from __future__ import annotations

import json
from collections.abc import Callable

VERSION = 4

_RUN_TEXT = ("uid", "host", "engine", "engine_version", "driver", "gpu_product", "sizeup_version",
             "workload_hash", "device_type", "workload_class")
_RUN_REAL = ("gpu_clock_mhz", "gpu_clock_max_mhz", "power_limit_w")
_CALIBRATION_TEXT = ("device_type", "engine", "engine_version", "workload_class")


def _statements(real: str) -> tuple[str, ...]:
    return (
        *(f"ALTER TABLE runs ADD COLUMN {c} TEXT" for c in _RUN_TEXT),
        *(f"ALTER TABLE runs ADD COLUMN {c} {real}" for c in _RUN_REAL),
        "ALTER TABLE points ADD COLUMN uid TEXT",
        *(f"ALTER TABLE calibrations ADD COLUMN {c} TEXT" for c in _CALIBRATION_TEXT),
        "CREATE UNIQUE INDEX runs_uid ON runs(uid)",
        "CREATE UNIQUE INDEX points_uid ON points(uid)",
        "CREATE INDEX runs_profile ON runs(device_type, engine, workload_class)",
    )


SQLITE = _statements("REAL")
POSTGRES = _statements("DOUBLE PRECISION")


def backfill(execute: Callable[[str, tuple], list]) -> None:
    """Fill the provenance of the runs already stored from their environment, config and writer columns."""
    from sizeup.store.provenance import from_environment

    rows = execute("SELECT id, kind, config, environment, writer FROM runs WHERE host IS NULL", ())
    for run_id, kind, config, environment, writer in rows:
        values = from_environment(kind, _loads(config), _loads(environment), _loads(writer))
        if not values:
            continue
        columns = sorted(values)
        execute(f"UPDATE runs SET {', '.join(c + ' = ?' for c in columns)} WHERE id = ?",
                (*(values[c] for c in columns), run_id))


def _loads(text: object) -> dict:
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}
