"""`sizeup runs list|show|export`: the measurement runs saved in the run store."""

from __future__ import annotations

import argparse
from pathlib import Path

from sizeup.report.terminal import render_table
from sizeup.units import number_flag


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("runs", help="saved measurement runs: list, show, export")
    verbs = p.add_subparsers(dest="verb", required=True, metavar="VERB")
    ls = verbs.add_parser("list", help="the runs, newest first")
    ls.add_argument("--limit", type=number_flag(integer=True, minimum=1, maximum=10**9), metavar="N", help="only the N newest runs")
    show = verbs.add_parser("show", help="one run with its points")
    show.add_argument("run_id", type=int, metavar="RUN_ID")
    export = verbs.add_parser("export", help="runs as CSV (one row per point) or JSON (runs with points and samples)")
    export.add_argument("run_ids", type=int, nargs="+", metavar="RUN_ID")
    kind = export.add_mutually_exclusive_group(required=True)
    kind.add_argument("--format", dest="fmt", choices=["csv", "json"], help="output format")
    kind.add_argument("--json", dest="fmt", action="store_const", const="json", help="the same as --format json")
    export.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    for q in (ls, show, export):
        q.add_argument("--db", metavar="PATH",
                       help="run database (default: $SIZEUP_DATA_DIR/runs.sqlite, else "
                            "$XDG_DATA_HOME/sizeup/runs.sqlite, else ~/.local/share/sizeup/runs.sqlite)")
    for q in (ls, show):
        q.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sizeup import api
    from sizeup.cli.main import emit_json

    if args.verb == "list":
        listed = api.runs(db=args.db, limit=args.limit)
        if args.json:
            emit_json(listed.to_dict())
        elif not listed.exists:
            print(f"no runs yet ({listed.db} does not exist)")
        elif not listed.runs:
            print(f"no runs in {listed.db}")
        else:
            rows = [[r.id, _time(r.created), r.kind, r.target, r.device, r.effective_status, r.point_count]
                    for r in listed.runs]
            print(render_table(["id", "started (UTC)", "kind", "target", "device", "status", "points"], rows,
                               right=[True, False, False, False, False, False, True]))
            print(f"\n{len(listed.runs)} runs in {listed.db}")
        return 0
    if args.verb == "show":
        record = api.run(args.run_id, db=args.db)
        emit_json(record.to_dict()) if args.json else print(render_run(record))
        return 0
    text = api.export_runs(args.run_ids, args.fmt, db=args.db)
    if args.out:
        out = Path(args.out).expanduser()
        try:
            out.write_text(text, encoding="utf-8")
        except OSError as e:
            from sizeup.errors import ConfigError

            raise ConfigError(f"cannot write {out}: {e.strerror or e}") from e
        print(f"wrote {len(args.run_ids)} runs to {out}")
    else:
        print(text, end="")
    return 0


def _time(iso: str) -> str:
    return iso[:19].replace("T", " ")


def _seconds(value: float | None) -> str:
    from sizeup.units import format_seconds

    return "" if value is None else format_seconds(value)


def render_run(record) -> str:
    from sizeup.units import format_bytes

    lines = [f"run {record.id}: {record.kind} of {record.target} on {record.device}  "
             f"({record.effective_status}; started {_time(record.created)} UTC)"]
    if record.writer_gone:
        lines.append("the process writing this run ended before finishing it (killed or crashed): its points "
                     "up to then are kept")
    if record.error:
        lines.append(f"error: {record.error}")
    if record.config:
        lines.append("config: " + ", ".join(f"{k}={v}" for k, v in sorted(record.config.items())))
    if not record.points:
        lines.append("no points")
        return "\n".join(lines)
    rows = [[p.id, "" if p.batch is None else p.batch, "" if p.grad_accumulation is None else p.grad_accumulation,
             p.phase, p.status, _seconds(p.latency_p50_s), _seconds(p.latency_p95_s), _seconds(p.latency_p99_s),
             p.repetitions, "" if p.throughput_per_s is None else f"{p.throughput_per_s:,.4g}",
             "" if p.peak_memory_bytes is None else format_bytes(p.peak_memory_bytes), p.error or ""]
            for p in record.points]
    lines.append(render_table(["point", "batch", "accum", "phase", "status", "p50", "p95", "p99", "reps", "per s",
                               "peak memory", "error"], rows,
                              right=[True, True, True, False, False, True, True, True, True, True, True, False]))
    return "\n".join(lines)
