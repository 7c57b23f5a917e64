"""The validation rows: every published measurement sizeup is checked against, as the command line a user would type.

A row file is any `tests/validation/*.yaml` whose rows carry a `command`: either a YAML list of rows, or a mapping
with `rows:` (and optionally `sources:`, each source's title, url, conditions). Every row has

    id         unique across all files
    source     a short id of the publication (one benchmark table, one repository's results, one PR thread);
               leave-one-source-out removes every row of one source at a time
    role       tuned (a data-file figure was fitted or hand-set from it) or check (nothing was fitted to it)
    command    `sizeup estimate|train|roofline ...` exactly as a user would type it from the source's stated
               conditions; nothing else about the row reaches the estimate
    metric     what the source measured (runner.METRICS: which figure of the command's --json it is compared with)
    value      the published value, in SI units (bytes, seconds, tokens/s)
    reference  where in the source the value is; retrieved: the date it was read

and may add `notes`, `cuda_context_bytes` (the source measured its own CUDA context: it replaces sizeup's in an
nvidia-smi figure), `off_catalog` (ran on hardware the catalog lacks: reported apart), `driver`, and `bound`:
`upper` when the source's value is only an upper bound on what it measured (a "longest context that fits in X GB"
table: the run's peak is at most X), `lower` when only a lower bound. A bound row is scored by side (summary.py: its
range is right when it reaches the allowed side of the bound) and never sets a range's centre (ranges_fit.py).
Adding a row file for a new engine is dropping such a file here (docs/validation.md)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
ROW_DIR = ROOT / "tests" / "validation"
ROLES = ("tuned", "check")
BOUNDS = ("upper", "lower")
REQUIRED = ("id", "source", "role", "command", "metric", "value")


@dataclass(frozen=True)
class Row:
    id: str
    file: str
    source: str
    role: str
    command: str
    metric: str
    value: float
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.command)

    @property
    def verb(self) -> str:
        return self.argv[1]

    def get(self, key: str, default=None):
        return self.extra.get(key, default)

    @property
    def bound(self) -> str | None:
        """'upper' / 'lower': the value only bounds the measured figure from above / below; None: a measured value."""
        return self.extra.get("bound")


def row_files(directory: Path = ROW_DIR) -> list[Path]:
    """Every YAML file of `directory` whose rows are command lines."""
    out = []
    for path in sorted(directory.glob("*.yaml")):
        rows = _raw_rows(path)
        if rows and isinstance(rows[0], dict) and "command" in rows[0]:
            out.append(path)
    return out


def _raw_rows(path: Path) -> list:
    data = yaml.safe_load(path.read_text())
    return data.get("rows", []) if isinstance(data, dict) else (data or [])


def sources(path: Path) -> dict:
    data = yaml.safe_load(path.read_text())
    return data.get("sources", {}) if isinstance(data, dict) else {}


@lru_cache(maxsize=None)
def load_file(path: Path) -> tuple[Row, ...]:
    out = []
    for raw in _raw_rows(path):
        missing = [k for k in REQUIRED if raw.get(k) in (None, "")]
        if missing:
            raise ValueError(f"{path.name}: row {raw.get('id')!r} lacks {', '.join(missing)}")
        if raw["role"] not in ROLES:
            raise ValueError(f"{path.name}: row {raw['id']}: role {raw['role']!r}, expected tuned or check")
        argv = shlex.split(raw["command"])
        if argv[:1] != ["sizeup"] or len(argv) < 3 or argv[1] not in ("estimate", "train", "roofline"):
            raise ValueError(f"{path.name}: row {raw['id']}: expected 'sizeup estimate|train|roofline ...', got "
                             f"{raw['command']!r}")
        if raw.get("bound") not in (None, *BOUNDS):
            raise ValueError(f"{path.name}: row {raw['id']}: bound {raw['bound']!r}, expected upper or lower")
        if "--json" in argv:
            raise ValueError(f"{path.name}: row {raw['id']}: the runner adds --json itself")
        extra = {k: v for k, v in raw.items() if k not in REQUIRED}
        engine = engine_of(argv)
        if engine is not None and not _engine_registered(engine):
            PENDING.append(f"{path.name}: {raw['id']} (engine {engine!r} not in sizeup yet)")
            continue  # a converted file's row for an engine another helper adds: left out until it exists
        out.append(Row(id=raw["id"], file=path.name, source=raw["source"], role=raw["role"], command=raw["command"],
                       metric=raw["metric"], value=float(raw["value"]), extra=extra))
    return tuple(out)


PENDING: list[str] = []
"""Rows left out because their command names an engine sizeup does not have yet (a shared row file converted by one
engine's helper while another adds the rest): listed, never priced."""


def engine_of(argv: list[str]) -> str | None:
    """The engine a command names (`--engine NAME[@RELEASE]`), without its release; None when it names none."""
    for i, arg in enumerate(argv):
        if arg == "--engine" and i + 1 < len(argv):
            return argv[i + 1].partition("@")[0]
        if arg.startswith("--engine="):
            return arg.split("=", 1)[1].partition("@")[0]
    return None


def _engine_registered(name: str) -> bool:
    from sizeup.engines.base import engine_class
    from sizeup.errors import ConfigError

    try:
        engine_class(name)
    except ConfigError:
        return False
    return True


def load(files: list[Path] | None = None) -> list[Row]:
    """The rows of `files` (default: every row file), ids checked unique; a row whose command sizeup refuses (a
    model, flag or context it cannot answer) is left out and listed in UNANSWERED with the command's own error."""
    from .runner import RowError, run_json

    rows = [r for path in (files if files is not None else row_files()) for r in load_file(Path(path))]
    seen: dict[str, str] = {}
    answered = []
    for r in rows:
        if r.id in seen:
            raise ValueError(f"row id {r.id!r} in both {seen[r.id]} and {r.file}")
        seen[r.id] = r.file
        try:
            run_json(r.command)  # cached: the pricing that follows reads the same run
        except RowError as e:
            note = f"{r.file}: {r.id}: {str(e).split(': ', 1)[-1]}"
            if note not in UNANSWERED:
                UNANSWERED.append(note)
            continue
        answered.append(r)
    return answered


UNANSWERED: list[str] = []
"""Rows whose command sizeup refuses with a one-line error (beyond what it models): listed, never priced."""


def files_named(*names: str) -> list[Path]:
    """Row files by name (`inference_measurements.yaml`) or glob (`inference_measurements_*.yaml`)."""
    out: list[Path] = []
    for name in names:
        found = sorted(ROW_DIR.glob(name))
        if not found:
            raise ValueError(f"no row file {name!r} under {ROW_DIR}")
        out += [p for p in found if p not in out]
    return out
